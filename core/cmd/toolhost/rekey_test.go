package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretKeyRotation (issue 30): toolhost tenant secret rekey seals
// every secret under the new key of the environment, opening them with
// --old-key-file; a wrong old key changes nothing; a second run seals
// none; afterwards the old key is refused and a server started with the
// new one gives a tool the same value. On the former code rekey is no
// subcommand (exit 2): the rotation existed in storage only.
func TestSecretKeyRotation(t *testing.T) {
	t.Parallel()
	const value = "sk-rotate-81QvZ"
	dir, data := t.TempDir(), t.TempDir()
	keyA, keyB := filepath.Join(dir, "a.key"), filepath.Join(dir, "b.key")
	os.WriteFile(keyA, []byte(strings.Repeat("a1", 32)+"\n"), 0o600)
	os.WriteFile(keyB, []byte(strings.Repeat("b2", 32)+"\n"), 0o600)
	underA, underB := []string{"TOOLHOST_SECRET_KEY_FILE=" + keyA}, []string{"TOOLHOST_SECRET_KEY_FILE=" + keyB}
	tenant(t, data, "default")
	run := func(env []string, stdin string, args ...string) (string, int) {
		cmd := exec.Command(bin, append(append([]string{"tenant", "secret"}, args...), "--data", data)...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), exitCode(err)
	}
	if out, code := run(underA, value, "set", "default", "API_KEY"); code != 0 {
		t.Fatalf("set: %d %s", code, out)
	}
	steps := []struct {
		name string
		env  []string
		args []string
		code int
		want string
	}{
		{"no old key", underB, []string{"rekey"}, 2, "--old-key-file is required"},
		{"no new key", nil, []string{"rekey", "--old-key-file", keyA}, 2, "no new key"},
		{"a wrong old key", underB, []string{"rekey", "--old-key-file", keyB}, 1, "nothing was changed"},
		{"the old key still opens them", underA, []string{"list", "default"}, 0, "API_KEY\t"},
		{"the rotation", underB, []string{"rekey", "--old-key-file", keyA}, 0, "sealed 1 secret(s) under the new key"},
		{"again: nothing to do", underB, []string{"rekey", "--old-key-file", keyA}, 0, "sealed 0 secret(s)"},
		{"the old key refused", underA, []string{"list", "default"}, 1, "does not match the stored secrets"},
		{"the new key opens them", underB, []string{"list", "default"}, 0, "API_KEY\t"},
	}
	for _, s := range steps {
		out, code := run(s.env, "", s.args...)
		if code != s.code || !strings.Contains(out, s.want) || strings.Contains(out, value) {
			t.Errorf("%s: exit %d %s, want %d and %q", s.name, code, out, s.code, s.want)
		}
	}
	// A server with the new key gives the tool the value as it was set.
	group := filepath.Join(dir, "group")
	os.MkdirAll(group, 0o755)
	os.WriteFile(filepath.Join(group, "keyed.yaml"), []byte(`kind: Plugin
name: Keyed
description: Reads its key.
dependencies: [keyed.py]
secrets: [API_KEY]
tools:
  - {kind: Tool, object_name: Digest, name: digest, description: The key's SHA-256., implementation: keyed.digest, parameters: []}
`), 0o644)
	os.WriteFile(filepath.Join(group, "keyed.py"), []byte("import hashlib\nimport toolhost\n\n\ndef digest():\n    return hashlib.sha256(toolhost.secret(\"API_KEY\").encode()).hexdigest()\n"), 0o644)
	s, _ := startServerEnv(t, underB, data, freePort(t), "--load", group, "--timeout", "20")
	token := s.loadedToken()
	s.waitStatus(token, "Keyed", "Ready")
	var a struct {
		Success bool            `json:"success"`
		Content json.RawMessage `json:"content"`
	}
	sum := sha256.Sum256([]byte(value))
	if code := s.do(token, "POST", "/v1/calls", strings.NewReader(`{"tool":"digest","arguments":{}}`), &a); code != 200 || !a.Success || string(a.Content) != `"`+hex.EncodeToString(sum[:])+`"` {
		t.Errorf("the call under the new key: %d %+v", code, a)
	}
}
