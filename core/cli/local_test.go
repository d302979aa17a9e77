package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"toolhost/core/definition"
)

// TestParseSecretFlag: --secret takes NAME=@FILE only (a value on the
// command line is refused, without being repeated in the message);
// --secret-env takes NAME or NAME=VAR; a name must be an identifier.
func TestParseSecretFlag(t *testing.T) {
	cases := []struct {
		arg        string
		env        bool
		name, from string
		err        string
	}{
		{"API_KEY=@/run/key", false, "API_KEY", "/run/key", ""},
		{"K=@k.txt", false, "K", "k.txt", ""},
		{"API_KEY=sk-live-123", false, "", "", `got "API_KEY=...": a value on the command line shows in ps`},
		{"API_KEY", false, "", "", "--secret wants NAME=@FILE"},
		{"API_KEY=@", false, "", "", "--secret wants NAME=@FILE"},
		{"API-KEY=@k", false, "", "", "API-KEY"},
		{"=@k", false, "", "", "secret name"},
		{"API_KEY", true, "API_KEY", "API_KEY", ""},
		{"API_KEY=WEATHER", true, "API_KEY", "WEATHER", ""},
		{"API_KEY=", true, "", "", "is not the name of an environment variable"},
		{"1KEY", true, "", "", "1KEY"},
	}
	for _, c := range cases {
		name, from, err := parseSecretFlag(c.arg, c.env)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q (env %v): %v, want an error with %q", c.arg, c.env, err, c.err)
			}
			if err != nil && strings.Contains(err.Error(), "sk-live") {
				t.Errorf("%q: the error repeats the value: %v", c.arg, err)
			}
			continue
		}
		if err != nil || name != c.name || from != c.from {
			t.Errorf("%q (env %v): %q %q %v, want %q %q", c.arg, c.env, name, from, err, c.name, c.from)
		}
	}
}

// TestLocalSecretsOpen: values from files (one final newline dropped) and
// the environment; a name twice, a missing file or variable refused; a
// name no group declares warned of; SecretValues answers the names set.
func TestLocalSecretsOpen(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "key")
	os.WriteFile(file, []byte("from-file\r\n"), 0o600)
	t.Setenv("TOOLHOST_TEST_SECRET", "from-env")
	g := &definition.Group{Name: "G", Secrets: []definition.Secret{{Name: "A"}, {Name: "B"}}}
	cases := []struct {
		name          string
		secrets, envs []string
		want          map[string]string
		err, warning  string
	}{
		{"file and env", []string{"A=@" + file}, []string{"B=TOOLHOST_TEST_SECRET"}, map[string]string{"A": "from-file", "B": "from-env"}, "", ""},
		{"twice", []string{"A=@" + file}, []string{"A=TOOLHOST_TEST_SECRET"}, nil, "given twice", ""},
		{"no file", []string{"A=@" + filepath.Join(dir, "nope")}, nil, nil, "--secret A:", ""},
		{"no variable", nil, []string{"A=TOOLHOST_TEST_NO_SUCH_VAR"}, nil, "the environment has no TOOLHOST_TEST_NO_SUCH_VAR", ""},
		{"undeclared", []string{"C=@" + file}, nil, map[string]string{"C": "from-file"}, "", "no group declares the secret C"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lf := &localFlags{secrets: c.secrets, secretEnvs: c.envs}
			var stderr bytes.Buffer
			s, err := lf.open(&stderr, "call", []*definition.Group{g})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("%v, want %q", err, c.err)
				}
				return
			}
			if err != nil || len(s) != len(c.want) {
				t.Fatalf("%v %v", s, err)
			}
			for k, v := range c.want {
				if s[k] != v {
					t.Errorf("%s = %q, want %q", k, s[k], v)
				}
			}
			if !strings.Contains(stderr.String(), c.warning) || (c.warning == "" && stderr.Len() > 0) {
				t.Errorf("stderr %q, want %q", stderr.String(), c.warning)
			}
			vals, _ := s.SecretValues(t.Context(), []string{"A", "Z"})
			if _, ok := vals["Z"]; ok || vals["A"] != c.want["A"] {
				t.Errorf("SecretValues: %v", vals)
			}
		})
	}
}

// FuzzParseSecretFlag: any --secret or --secret-env argument parses or is
// refused without a panic; a name accepted is an identifier, and a refused
// --secret never repeats what follows its =.
func FuzzParseSecretFlag(f *testing.F) {
	for _, s := range []string{"A=@f", "A=v", "A", "A=", "=", "@", "A=@", "A=B=C", "A=\x00", "é=@x"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, arg string, env bool) {
		name, from, err := parseSecretFlag(arg, env)
		if err != nil {
			if _, value, ok := strings.Cut(arg, "="); ok && !env && len(value) > 3 && strings.Contains(err.Error(), value) {
				t.Fatalf("%q: the error repeats the value: %v", arg, err)
			}
			return
		}
		if name == "" || from == "" || strings.ContainsAny(name, "=@ ") {
			t.Fatalf("%q: name %q from %q", arg, name, from)
		}
	})
}
