package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"toolhost/core/definition"
	"toolhost/core/httptool"
	"toolhost/storage"
)

// localFlags are what a local run (call, session, mcp) takes in place of
// the server's tenant secrets and its --http-allow: the secrets a group
// declares, read from files or the environment (a value is never taken
// from the command line itself, where ps and the shell's history show
// it), and the targets HTTP tools may reach past the address checks.
type localFlags struct {
	secrets, secretEnvs, httpAllow multiFlag
}

func addLocalFlags(fs *flag.FlagSet) *localFlags {
	lf := &localFlags{}
	fs.Var(&lf.secrets, "secret", "a secret of the group, `NAME=@FILE`: its value is FILE's content (one final newline dropped), as toolhost.secret(NAME) and an HTTP tool's secrets.NAME read it, redacted from the output; repeatable")
	fs.Var(&lf.secretEnvs, "secret-env", "a secret of the group from the environment, `NAME[=VAR]`: its value is $VAR (default $NAME); repeatable")
	fs.Var(&lf.httpAllow, "http-allow", "let HTTP tools reach `HOST:PORT` although its address is loopback, private or link-local (a local mock of an API); repeatable")
	return lf
}

// httpClient is the client of the run's HTTP tools.
func (lf *localFlags) httpClient() *httptool.Client {
	return &httptool.Client{Allow: lf.httpAllow}
}

// localSecrets are the secrets of a local run, by name: the run's
// SecretSource (pipeline.Pipeline.Secrets).
type localSecrets map[string]string

// SecretValues gives the values of the names that are set.
func (s localSecrets) SecretValues(_ context.Context, names []string) (map[string]string, error) {
	out := map[string]string{}
	for _, n := range names {
		if v, ok := s[n]; ok {
			out[n] = v
		}
	}
	return out, nil
}

// parseSecretFlag reads one --secret (env false) or --secret-env (env
// true) value: the secret's name and where its value is, a file or an
// environment variable.
func parseSecretFlag(arg string, env bool) (name, from string, err error) {
	name, from, given := strings.Cut(arg, "=")
	if err := storage.CheckSecretName(name); err != nil {
		return "", "", err
	}
	switch {
	case env && !given:
		return name, name, nil
	case env:
		if from == "" || strings.ContainsAny(from, "=\x00") {
			return "", "", fmt.Errorf("--secret-env %s: %q is not the name of an environment variable", name, from)
		}
		return name, from, nil
	case !given || !strings.HasPrefix(from, "@") || len(from) == 1:
		return "", "", fmt.Errorf("--secret wants NAME=@FILE, got %q: a value on the command line shows in ps and the shell's history; write it in a file, or use --secret-env NAME=VAR", redactArg(arg))
	}
	return name, from[1:], nil
}

// redactArg is a --secret argument as an error may show it: its name,
// never what follows the = (which may be a value given by mistake).
func redactArg(arg string) string {
	if name, _, ok := strings.Cut(arg, "="); ok {
		return name + "=..."
	}
	return arg
}

// open reads the secrets the flags name. A name given twice is refused;
// one no group declares is told on stderr, since no tool can read it.
func (lf *localFlags) open(stderr io.Writer, cmd string, groups []*definition.Group) (localSecrets, error) {
	s := localSecrets{}
	set := func(name, value string) error {
		if _, dup := s[name]; dup {
			return fmt.Errorf("the secret %s is given twice", name)
		}
		if len(value) > storage.MaxSecretSize {
			return fmt.Errorf("the secret %s is %d bytes, more than %d", name, len(value), storage.MaxSecretSize)
		}
		s[name] = value
		return nil
	}
	for _, arg := range lf.secrets {
		name, file, err := parseSecretFlag(arg, false)
		if err != nil {
			return nil, err
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--secret %s: %v", name, err)
		}
		if err := set(name, strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")); err != nil {
			return nil, err
		}
	}
	for _, arg := range lf.secretEnvs {
		name, v, err := parseSecretFlag(arg, true)
		if err != nil {
			return nil, err
		}
		value, ok := os.LookupEnv(v)
		if !ok {
			return nil, fmt.Errorf("--secret-env %s: the environment has no %s", name, v)
		}
		if err := set(name, value); err != nil {
			return nil, err
		}
	}
	declared := map[string]bool{}
	for _, g := range groups {
		for _, n := range g.SecretNames() {
			declared[n] = true
		}
	}
	var unused []string
	for n := range s {
		if !declared[n] {
			unused = append(unused, n)
		}
	}
	sort.Strings(unused)
	for _, n := range unused {
		fmt.Fprintf(stderr, "toolhost %s: WARNING: no group declares the secret %s (its secrets key), so no tool can read it\n", cmd, n)
	}
	return s, nil
}
