package cli

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"toolhost/storage"
)

// TestTenantCommands walks a tenant's life on a real SQLite file: create,
// a second token, list, revoke (argument and stdin), and every misuse.
func TestTenantCommands(t *testing.T) {
	data := t.TempDir()
	var tokens []string // tokens printed so far, in order
	steps := []struct {
		name   string
		stdin  string
		args   []string
		token  int // index into tokens for a "{tok}" argument or stdin, -1 for none
		code   int
		out    string // substring of stdout
		errOut string // substring of stderr
		newTok bool   // stdout is a new token
	}{
		{name: "create", args: []string{"tenant", "create", "--init", "acme"}, token: -1, code: ExitOK, newTok: true},
		{name: "create again", args: []string{"tenant", "create", "acme"}, token: -1, code: ExitUsage, errOut: "already exists"},
		{name: "second token", args: []string{"tenant", "token", "acme"}, token: -1, code: ExitOK, newTok: true},
		{name: "token for nobody", args: []string{"tenant", "token", "nobody"}, token: -1, code: ExitUsage, errOut: `tenant "nobody"`},
		{name: "list", args: []string{"tenant", "list"}, token: -1, code: ExitOK, out: "acme\t2 token(s)"},
		{name: "revoke by argument", args: []string{"tenant", "revoke", "{tok}"}, token: 0, code: ExitOK, out: `tenant "acme"`},
		{name: "revoke twice", args: []string{"tenant", "revoke", "{tok}"}, token: 0, code: ExitUsage, errOut: "no tenant has this token"},
		{name: "list after revoke", args: []string{"tenant", "list"}, token: -1, code: ExitOK, out: "acme\t1 token(s)"},
		{name: "revoke from stdin", args: []string{"tenant", "revoke", "-"}, token: 1, code: ExitOK, out: "revoked"},
		{name: "list after both", args: []string{"tenant", "list"}, token: -1, code: ExitOK, out: "acme\t0 token(s)"},
		{name: "help", args: []string{"tenant", "--help"}, token: -1, code: ExitOK, out: "tenant revoke TOKEN|-"},
		{name: "no subcommand", args: []string{"tenant"}, token: -1, code: ExitUsage, errOut: "want one of"},
		{name: "unknown subcommand", args: []string{"tenant", "delete", "acme"}, token: -1, code: ExitUsage, errOut: `no subcommand "delete"`},
		{name: "missing name", args: []string{"tenant", "create"}, token: -1, code: ExitUsage, errOut: "want 1 argument(s), got 0"},
		{name: "extra argument", args: []string{"tenant", "list", "x"}, token: -1, code: ExitUsage, errOut: "want 0 argument(s), got 1"},
	}
	for _, st := range steps {
		args := append([]string(nil), st.args...)
		stdin := st.stdin
		if st.token >= 0 {
			for i, a := range args {
				if a == "{tok}" {
					args[i] = tokens[st.token]
				}
			}
			if args[len(args)-1] == "-" {
				stdin = tokens[st.token] + "\n"
			}
		}
		code, out, errOut := runWith(stdin, append(args, "--data", data)...)
		if code != st.code || !strings.Contains(out, st.out) || !strings.Contains(errOut, st.errOut) {
			t.Fatalf("%s: exit %d (want %d)\nstdout: %s\nstderr: %s", st.name, code, st.code, out, errOut)
		}
		if st.newTok {
			tok := strings.TrimSpace(out)
			if !strings.HasPrefix(tok, "th_") {
				t.Fatalf("%s: %q is not a token", st.name, out)
			}
			tokens = append(tokens, tok)
		}
	}
	// Both tokens are dead in the database itself.
	db, err := storage.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i, tok := range tokens {
		if _, err := db.TenantByToken(context.Background(), tok); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("token %d still works after revoke: %v", i, err)
		}
	}
}

// TestTenantJSON: every tenant subcommand whose output a script reads
// prints JSON with --json (parsed here), on a real SQLite file: create,
// token, list, quota (shown and changed) and secret list.
func TestTenantJSON(t *testing.T) {
	t.Setenv(SecretKeyEnv, strings.Repeat("ab", 32))
	data := t.TempDir()
	if code, out, errOut := runWith("", "tenant", "create", "--init", "acme", "--data", data); code != ExitOK {
		t.Fatalf("create: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := runWith("s3cret\n", "tenant", "secret", "set", "acme", "API_KEY", "--data", data); code != ExitOK {
		t.Fatalf("secret set: %d %s %s", code, out, errOut)
	}
	tests := []struct {
		args  []string
		check func(t *testing.T, out []byte) // out is valid JSON already
	}{
		{[]string{"tenant", "token", "--json", "acme"}, func(t *testing.T, out []byte) {
			var v struct{ Tenant, Token string }
			json.Unmarshal(out, &v)
			if v.Tenant != "acme" || !strings.HasPrefix(v.Token, "th_") {
				t.Errorf("%+v", v)
			}
		}},
		{[]string{"tenant", "list", "--json"}, func(t *testing.T, out []byte) {
			var v []TenantListEntry
			json.Unmarshal(out, &v)
			if len(v) != 1 || v[0].Name != "acme" || v[0].Tokens != 2 {
				t.Errorf("%+v", v)
			}
		}},
		{[]string{"tenant", "quota", "--json", "acme"}, func(t *testing.T, out []byte) {
			var v TenantQuotaJSON
			json.Unmarshal(out, &v)
			if v.Tenant != "acme" || v.Changed || v.Quota != (storage.Quota{}) {
				t.Errorf("%+v", v)
			}
		}},
		{[]string{"tenant", "quota", "--json", "--groups", "5", "--calls-per-second", "unlimited", "acme"}, func(t *testing.T, out []byte) {
			var v TenantQuotaJSON
			json.Unmarshal(out, &v)
			if !v.Changed || v.Quota.Groups != 5 || v.Quota.CallsPerSecond != storage.Unlimited {
				t.Errorf("%+v", v)
			}
		}},
		{[]string{"tenant", "secret", "list", "--json", "acme"}, func(t *testing.T, out []byte) {
			var v []storage.SecretInfo
			json.Unmarshal(out, &v)
			if len(v) != 1 || v[0].Name != "API_KEY" || v[0].Size <= 0 || v[0].UpdatedAt == "" || strings.Contains(string(out), "s3cret") {
				t.Errorf("%s", out)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := runWith("", append(tt.args, "--data", data)...)
			if code != ExitOK {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			if !json.Valid([]byte(out)) {
				t.Fatalf("not JSON:\n%s", out)
			}
			tt.check(t, []byte(out))
		})
	}
}
