package cli

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// TestHelpOnStdout: every command's --help (and -h, and help CMD) goes to
// stdout with exit 0 and nothing on stderr; its flags are written --flag,
// never -flag.
func TestHelpOnStdout(t *testing.T) {
	var cases [][]string
	for _, name := range commandNames() {
		cases = append(cases, []string{name, "--help"}, []string{name, "-h"})
		if name != "help" {
			cases = append(cases, []string{"help", name})
		}
	}
	for _, sub := range tenantSubcommandNames() {
		cases = append(cases, []string{"tenant", sub, "--help"})
	}
	cases = append(cases, []string{"tenant", "secret", "--help"}, []string{"tenant", "secret", "set", "--help"})
	cases = append(cases, []string{"--help"}, []string{"-h"}, []string{"help"})
	singleDash := regexp.MustCompile(`(?m)^\s+-[A-Za-z]`)
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errs := run(args...)
			if code != ExitOK || errs != "" || !strings.Contains(out, "Usage") {
				t.Fatalf("exit %d (want 0), stderr %q (want none), stdout:\n%s", code, errs, out)
			}
			if m := singleDash.FindString(out); m != "" {
				t.Errorf("help shows a flag as %q, not --flag:\n%s", m, out)
			}
		})
	}
	// A command with flags lists them, as --name.
	_, out, _ := run("serve", "--help")
	for _, f := range []string{"--data DIR", "--addr HOST:PORT", "--load DIR"} {
		if !strings.Contains(out, "\n  "+f) {
			t.Errorf("serve --help lacks %q:\n%s", f, out)
		}
	}
}

// TestTopLevelHelpAligned: each command's summary starts in one column.
func TestTopLevelHelpAligned(t *testing.T) {
	_, out, _ := run("--help")
	line := regexp.MustCompile(`^  ([a-z]+)( +)\S`)
	col, seen := -1, map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		m := line.FindStringSubmatchIndex(l)
		if m == nil {
			continue
		}
		name := l[m[2]:m[3]]
		if _, ok := commands[name]; !ok {
			continue
		}
		seen[name] = true
		if col == -1 {
			col = m[5]
		} else if m[5] != col {
			t.Errorf("%q's summary starts at column %d, the others at %d:\n%s", name, m[5], col, out)
		}
	}
	if len(seen) != len(commands) {
		t.Errorf("the help lists %d of the %d commands:\n%s", len(seen), len(commands), out)
	}
}

// TestUsageErrors: a wrong command line answers exit 2, its error on
// stderr (nothing on stdout), with a did-you-mean where a word is close.
func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"mistyped command", []string{"vaildate"}, `unknown command "vaildate" (did you mean "validate"?)`},
		{"mistyped --version", []string{"--verison"}, `unknown flag "--verison" (did you mean "--version"?)`},
		{"mistyped flag", []string{"schema", "--dialekt", "openai", crmYAML}, `unknown flag --dialekt (did you mean "--dialect"?)`},
		{"mistyped flag, single dash", []string{"serve", "-adr", "x"}, `unknown flag --adr (did you mean "--addr"?)`},
		{"mistyped tenant flag", []string{"tenant", "list", "--jsn"}, `unknown flag --jsn (did you mean "--json"?)`},
		{"mistyped tenant subcommand", []string{"tenant", "lst"}, `no subcommand "lst" (did you mean "list"?)`},
		{"mistyped secret subcommand", []string{"tenant", "secret", "lsit"}, `no subcommand "lsit" (did you mean "list"?)`},
		{"mistyped secret flag", []string{"tenant", "secret", "list", "acme", "--dat", "x"}, `unknown flag --dat (did you mean "--data"?)`},
		{"flag without its value", []string{"logs", "--kind"}, "flag needs an argument: --kind"},
		{"bad value", []string{"bench", "--n", "many", crmYAML, "x"}, `invalid value "many" for flag --n`},
		{"bad boolean", []string{"validate", "--json=maybe", crmYAML}, `invalid boolean value "maybe" for --json`},
		{"unknown flag, nothing close", []string{"version", "--zzzzzz"}, "unknown flag --zzzzzz\n"},
		{"missing argument", []string{"schema"}, "want GROUP.yaml"},
		{"missing tenant name", []string{"tenant", "create"}, "want 1 argument(s), got 0"},
		{"missing session", []string{"logs"}, "want one SESSION id"},
		{"no shell", []string{"completion"}, "want one shell"},
		{"mistyped shell", []string{"completion", "bsh"}, `no shell "bsh"; want bash, zsh or fish (did you mean "bash"?)`},
		{"version takes no argument", []string{"version", "x"}, "takes no arguments"},
		{"no command", nil, "Usage:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := run(tt.args...)
			if code != ExitUsage || out != "" || !strings.Contains(errs, tt.stderr) {
				t.Fatalf("exit %d (want 2), stdout %q (want none), stderr lacks %q:\n%s", code, out, tt.stderr, errs)
			}
		})
	}
}

// TestVersion: toolhost version, --version and version --json tell the
// build's version and Go version (the test binary's own build info).
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errs := run(args...)
		if code != ExitOK || errs != "" || !strings.HasPrefix(out, "toolhost ") || !strings.Contains(out, runtime.Version()) {
			t.Errorf("%v: exit %d, stderr %q, stdout:\n%s", args, code, errs, out)
		}
	}
	code, out, _ := run("version", "--json")
	var v VersionInfo
	if err := json.Unmarshal([]byte(out), &v); code != ExitOK || err != nil {
		t.Fatalf("version --json: exit %d, %v:\n%s", code, err, out)
	}
	if v.Go != runtime.Version() || v.Version == "" || v.Module != "toolhost" || v.Platform != runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("version --json: %+v", v)
	}
}

// TestTenantListJSON: tenant list --json is an array a script can read,
// with each tenant's token count and quota overrides; on a file (not a
// terminal) the plain output stays one tab-separated line a tenant.
func TestTenantListJSON(t *testing.T) {
	data := t.TempDir()
	if code, out, errs := run("tenant", "create", "--init", "--json", "acme", "--data", data); code != ExitOK {
		t.Fatalf("create: %d %s %s", code, out, errs)
	} else {
		var tok tenantTokenJSON
		if err := json.Unmarshal([]byte(out), &tok); err != nil || tok.Tenant != "acme" || !strings.HasPrefix(tok.Token, "th_") {
			t.Fatalf("create --json: %v %q", err, out)
		}
	}
	run("tenant", "create", "beta", "--data", data)
	run("tenant", "token", "beta", "--data", data)
	run("tenant", "quota", "beta", "--groups", "7", "--data", data)
	code, out, errs := run("tenant", "list", "--json", "--data", data)
	var list []TenantListEntry
	if err := json.Unmarshal([]byte(out), &list); code != ExitOK || err != nil {
		t.Fatalf("list --json: exit %d, %v\n%s%s", code, err, out, errs)
	}
	want := map[string][2]int64{"acme": {1, 0}, "beta": {2, 7}}
	if len(list) != 2 {
		t.Fatalf("list --json: %+v", list)
	}
	for _, e := range list {
		if w := want[e.Name]; int64(e.Tokens) != w[0] || e.Quota.Groups != w[1] {
			t.Errorf("%s: %d tokens, groups quota %d; want %v", e.Name, e.Tokens, e.Quota.Groups, w)
		}
	}
	_, out, _ = run("tenant", "list", "--data", data)
	if !strings.Contains(out, "acme\t1 token(s)\tdefault quota\n") {
		t.Errorf("plain list:\n%s", out)
	}
}

// TestNoEmptyDataFolder: the commands that open an existing store refuse a
// --data with no toolhost database, naming it and saying how to make one,
// and create nothing; tenant create --init and serve create one.
func TestNoEmptyDataFolder(t *testing.T) {
	root := t.TempDir()
	missing := filepath.Join(root, "dta")
	emptyDir := filepath.Join(root, "empty")
	os.Mkdir(emptyDir, 0o755)
	// From another folder: the default ./data is not there either.
	wd, _ := os.Getwd()
	if err := os.Chdir(root); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	t.Setenv(DataEnv, "")
	t.Setenv(DBEnv, "")
	tests := []struct {
		name   string
		args   []string
		folder string
		why    string
	}{
		{"create, mistyped --data", []string{"tenant", "create", "acme", "--data", missing}, missing, "no data folder"},
		{"list, mistyped --data", []string{"tenant", "list", "--data", missing}, missing, "no data folder"},
		{"token", []string{"tenant", "token", "acme", "--data", missing}, missing, "no data folder"},
		{"revoke", []string{"tenant", "revoke", "th_x", "--data", missing}, missing, "no data folder"},
		{"quota", []string{"tenant", "quota", "acme", "--groups", "1", "--data", missing}, missing, "no data folder"},
		{"logs", []string{"logs", "s1", "--data", missing}, missing, "no data folder"},
		{"secret list", []string{"tenant", "secret", "list", "acme", "--data", missing}, missing, "no data folder"},
		{"secret set", []string{"tenant", "secret", "set", "acme", "K", "--data", missing}, missing, "no data folder"},
		{"list, default ./data from another folder", []string{"tenant", "list"}, "./data", "no data folder ./data (" + filepath.Join(root, "data") + ")"},
		{"create, default ./data from another folder", []string{"tenant", "create", "acme"}, "./data", "no data folder ./data"},
		{"list, a folder without a database", []string{"tenant", "list", "--data", emptyDir}, emptyDir, "holds no toolhost database (toolhost.db)"},
		{"create, a folder without a database", []string{"tenant", "create", "acme", "--data", emptyDir}, emptyDir, "holds no toolhost database"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := run(tt.args...)
			if code != ExitFailure || out != "" {
				t.Fatalf("exit %d (want 1), stdout %q\nstderr: %s", code, out, errs)
			}
			for _, part := range []string{tt.why, tt.folder, `toolhost serve --data DIR`, `--init`} {
				if !strings.Contains(errs, part) {
					t.Errorf("stderr lacks %q:\n%s", part, errs)
				}
			}
		})
	}
	for _, p := range []string{missing, filepath.Join(root, "data")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s was created (%v)", p, err)
		}
	}
	if entries, _ := os.ReadDir(emptyDir); len(entries) != 0 {
		t.Errorf("%s got %d entries", emptyDir, len(entries))
	}
	// --init creates the folder and its database; the next commands use it.
	if code, out, errs := run("tenant", "create", "--init", "acme", "--data", missing); code != ExitOK || !strings.HasPrefix(out, "th_") {
		t.Fatalf("create --init: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := run("tenant", "list", "--data", missing); code != ExitOK || !strings.HasPrefix(out, "acme\t1 token(s)") {
		t.Fatalf("list after --init: exit %d\n%s%s", code, out, errs)
	}
	// $TOOLHOST_DATA is the default --data.
	t.Setenv(DataEnv, missing)
	if code, out, errs := run("tenant", "list"); code != ExitOK || !strings.HasPrefix(out, "acme\t") {
		t.Fatalf("list with $%s: exit %d\n%s%s", DataEnv, code, out, errs)
	}
}

// TestUsageLinesShowFlags: every command's usage line (the first line of
// its --help) writes flags as --flag, names only flags the command has,
// and names every flag it has, or says where the rest are: "[run flags]"
// (the limits and runtime flags of the commands that run a group),
// "[quota flags]" or "[flags]".
func TestUsageLinesShowFlags(t *testing.T) {
	runFlagNames := map[string]bool{}
	rfs := flag.NewFlagSet("run", flag.ContinueOnError)
	addRunFlags(rfs)
	rfs.VisitAll(func(f *flag.Flag) { runFlagNames[f.Name] = true })
	quotaNames := map[string]bool{}
	qfs := flag.NewFlagSet("quota", flag.ContinueOnError)
	addQuotaFlags(qfs, "", nil)
	qfs.VisitAll(func(f *flag.Flag) { quotaNames[f.Name] = true })

	var cases [][]string
	for _, name := range commandNames() {
		if name != "tenant" {
			cases = append(cases, []string{name})
		}
	}
	for _, sub := range tenantSubcommandNames() {
		cases = append(cases, []string{"tenant", sub})
	}
	for _, sub := range secretSubcommands {
		cases = append(cases, []string{"tenant", "secret", sub})
	}
	named := regexp.MustCompile(`(?:^|[\s\[|(])(--?)([a-z][a-z0-9-]*)`)
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			_, out, _ := run(append(args, "--help")...)
			usage, _, _ := strings.Cut(out, "\n")
			if !strings.HasPrefix(usage, "Usage: toolhost ") {
				t.Fatalf("no usage line:\n%s", out)
			}
			flags := map[string]bool{}
			for _, f := range collectFlags(append(args, "--help")...) {
				flags[f.Name] = true
			}
			inUsage := map[string]bool{}
			for _, m := range named.FindAllStringSubmatch(usage, -1) {
				if m[1] == "-" {
					t.Errorf("the usage line writes -%s, not --%s: %s", m[2], m[2], usage)
				}
				if !flags[m[2]] {
					t.Errorf("the usage line names --%s, which the command does not have: %s", m[2], usage)
				}
				inUsage[m[2]] = true
			}
			for f := range flags {
				switch {
				case inUsage[f]:
				case runFlagNames[f] && strings.Contains(usage, "[run flags]"):
				case quotaNames[f] && strings.Contains(usage, "[quota flags]"):
				case strings.Contains(usage, "[flags]"):
				default:
					t.Errorf("the usage line neither names --%s nor says [flags] (or [run flags]): %s", f, usage)
				}
			}
		})
	}
}
