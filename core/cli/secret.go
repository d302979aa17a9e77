package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"toolhost/core/suggest"
	"toolhost/storage"
)

// The environment that gives a server (and the tenant secret commands)
// its secret key: a key file, or the key itself. The key is never stored
// in the database.
const (
	SecretKeyFileEnv = "TOOLHOST_SECRET_KEY_FILE"
	SecretKeyEnv     = "TOOLHOST_SECRET_KEY"
)

// secretKey reads the key the environment names: nil when it names none.
func secretKey() (*storage.SecretKey, error) {
	file, inline := os.Getenv(SecretKeyFileEnv), os.Getenv(SecretKeyEnv)
	switch {
	case file != "" && inline != "":
		return nil, fmt.Errorf("both $%s and $%s are set: give the secret key one way", SecretKeyFileEnv, SecretKeyEnv)
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("$%s: %w", SecretKeyFileEnv, err)
		}
		k, err := storage.ParseSecretKey(string(b))
		if err != nil {
			return nil, fmt.Errorf("$%s (%s): %w", SecretKeyFileEnv, file, err)
		}
		return k, nil
	case inline != "":
		k, err := storage.ParseSecretKey(inline)
		if err != nil {
			return nil, fmt.Errorf("$%s: %w", SecretKeyEnv, err)
		}
		return k, nil
	}
	return nil, nil
}

// useSecretKey gives a store opened by a command its secret key, and
// refuses one other than the key its secrets were sealed with (unless ctx
// is a rotation's, withoutKeyCheck: its new key seals nothing yet).
func useSecretKey(ctx context.Context, db storage.Store) error {
	k, err := secretKey()
	if err != nil || k == nil {
		return err
	}
	db.SetSecretKey(k)
	if ctx.Value(noKeyCheck{}) != nil {
		return nil
	}
	return db.CheckSecretKey(ctx)
}

// noKeyCheck marks the context of a key rotation, which opens the store
// under a key the stored secrets are not sealed with yet.
type noKeyCheck struct{}

// withoutKeyCheck is ctx for opening a store to rotate its key.
func withoutKeyCheck(ctx context.Context) context.Context {
	return context.WithValue(ctx, noKeyCheck{}, true)
}

// rekey seals every tenant's secrets under the key of the environment
// (the new one), opening them with the key in oldFile: a key rotation.
func rekey(ctx context.Context, data, dbURL, oldFile string, stdout io.Writer) error {
	if oldFile == "" {
		return fmt.Errorf("--old-key-file is required: the key the secrets are sealed with now: %w", errUsage)
	}
	newKey, err := secretKey()
	if err != nil {
		return err
	}
	if newKey == nil {
		return fmt.Errorf("no new key: set $%s or $%s to it: %w", SecretKeyFileEnv, SecretKeyEnv, errUsage)
	}
	b, err := os.ReadFile(oldFile)
	if err != nil {
		return fmt.Errorf("--old-key-file: %w", err)
	}
	oldKey, err := storage.ParseSecretKey(string(b))
	if err != nil {
		return fmt.Errorf("--old-key-file (%s): %w", oldFile, err)
	}
	db, err := openExistingStore(withoutKeyCheck(ctx), data, dbURL, false)
	if err != nil {
		return err
	}
	defer db.Close()
	n, err := db.RekeySecrets(ctx, oldKey)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "sealed %d secret(s) under the new key; start the servers with it\n", n)
	return nil
}

// secretUsage is the synopsis of the tenant secret subcommands.
const secretUsage = `toolhost tenant secret set TENANT NAME [--data DIR | --db URL]   (the value on standard input)
toolhost tenant secret rm TENANT NAME [--data DIR | --db URL]
toolhost tenant secret list TENANT [--json] [--data DIR | --db URL]
toolhost tenant secret rekey --old-key-file FILE [--data DIR | --db URL]   (the new key in $TOOLHOST_SECRET_KEY_FILE or $TOOLHOST_SECRET_KEY)`

// secretSubcommands are tenant secret's subcommands, in secretUsage's order.
var secretSubcommands = []string{"set", "rm", "list", "rekey"}

// secretUsageOf is one subcommand's line of secretUsage.
func secretUsageOf(sub string) string {
	for _, l := range strings.Split(secretUsage, "\n") {
		if strings.HasPrefix(l, "toolhost tenant secret "+sub+" ") {
			return l
		}
	}
	return secretUsage
}

// runTenantSecret is toolhost tenant secret: a tenant's secrets are set
// (the value read from standard input, so that it is in no process list
// or shell history), removed and listed (names, sizes and times), never
// shown.
func runTenantSecret(env *Env, args []string) int {
	asJSON := new(bool)
	subs := map[string]struct {
		nargs int
		run   func(ctx context.Context, db storage.Store, tenant storage.Tenant, args []string) error
	}{
		"set": {2, func(ctx context.Context, db storage.Store, t storage.Tenant, args []string) error {
			b, err := io.ReadAll(io.LimitReader(env.Stdin, storage.MaxSecretSize+2))
			if err != nil {
				return err
			}
			value := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
			if value == "" {
				return fmt.Errorf("secret %q: no value on standard input: %w", args[1], errUsage)
			}
			info, err := db.PutSecret(ctx, t.ID, args[1], value)
			if err == nil {
				fmt.Fprintf(env.Stdout, "set secret %q of tenant %q (%d bytes sealed)\n", info.Name, t.Name, info.Size)
			}
			return err
		}},
		"rm": {2, func(ctx context.Context, db storage.Store, t storage.Tenant, args []string) error {
			if err := db.DeleteSecret(ctx, t.ID, args[1]); err != nil {
				return fmt.Errorf("secret %q of tenant %q: %w", args[1], t.Name, err)
			}
			fmt.Fprintf(env.Stdout, "removed secret %q of tenant %q\n", args[1], t.Name)
			return nil
		}},
		"list": {1, func(ctx context.Context, db storage.Store, t storage.Tenant, _ []string) error {
			list, err := db.Secrets(ctx, t.ID)
			if err != nil {
				return err
			}
			printSecrets(env, list, *asJSON)
			return nil
		}},
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		// --help on stdout (exit 0); no subcommand is a usage error.
		w := env.Stdout
		if len(args) == 0 {
			w = env.Stderr
		}
		fmt.Fprintf(w, "Usage:\n%s\n\nA secret is never printed back. The server's key comes from $%s (a file of 32 random bytes, hex or base64) or $%s.\n",
			secretUsage, SecretKeyFileEnv, SecretKeyEnv)
		if len(args) == 0 {
			return ExitUsage
		}
		return ExitOK
	}
	sub, ok := subs[args[0]]
	if args[0] == "rekey" {
		ok = true
	}
	if !ok {
		fmt.Fprintf(env.Stderr, "toolhost tenant secret: no subcommand %q%s; want one of:\n%s\n", args[0], suggest.DidYouMean(args[0], secretSubcommands), secretUsage)
		return ExitUsage
	}
	name := "tenant secret " + args[0]
	fs := newCommandFlags(env, name, secretUsageOf(args[0]), "set, remove or list a tenant's secrets (a value is never printed), or seal them all under a new key")
	data := addDataFlag(fs, "data `DIR`ectory of the server")
	dbURL := addDBFlag(fs)
	if args[0] == "list" {
		asJSON = fs.Bool("json", false, "print the secrets (names, sizes, times; never a value) as a JSON array")
	}
	var oldKeyFile *string
	if args[0] == "rekey" {
		oldKeyFile = fs.String("old-key-file", "", "`FILE` of the key the secrets are sealed with now (the new key comes from $"+SecretKeyFileEnv+" or $"+SecretKeyEnv+")")
	}
	pos, code, ok := parse(fs, args[1:])
	if !ok {
		return code
	}
	if oldKeyFile != nil {
		if len(pos) != 0 {
			fmt.Fprintf(env.Stderr, "toolhost %s: want no argument, got %d\n%s\n", name, len(pos), secretUsage)
			return ExitUsage
		}
		if err := rekey(context.Background(), *data, *dbURL, *oldKeyFile, env.Stdout); err != nil {
			fmt.Fprintf(env.Stderr, "toolhost %s: %v\n", name, err)
			if errors.Is(err, errUsage) {
				return ExitUsage
			}
			return ExitFailure
		}
		return ExitOK
	}
	if len(pos) != sub.nargs {
		fmt.Fprintf(env.Stderr, "toolhost %s: want %d argument(s), got %d\n%s\n", name, sub.nargs, len(pos), secretUsage)
		return ExitUsage
	}
	ctx := context.Background()
	db, err := openExistingStore(ctx, *data, *dbURL, false)
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost %s: %v\n", name, err)
		return ExitFailure
	}
	defer db.Close()
	t, err := db.TenantByName(ctx, pos[0])
	if err == nil {
		err = sub.run(ctx, db, t, pos)
	} else {
		err = fmt.Errorf("tenant %q: %w", pos[0], err)
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost %s: %v\n", name, err)
		if errors.Is(err, storage.ErrNotFound) || errors.Is(err, errUsage) {
			return ExitUsage
		}
		return ExitFailure
	}
	return ExitOK
}

// printSecrets prints a tenant's secrets (never a value): a JSON array with
// asJSON, an aligned table with a header on a terminal, and otherwise one
// tab-separated line each (name, sealed size, last update).
func printSecrets(env *Env, list []storage.SecretInfo, asJSON bool) {
	switch {
	case asJSON:
		if list == nil {
			list = []storage.SecretInfo{}
		}
		b, _ := json.MarshalIndent(list, "", "  ")
		fmt.Fprintf(env.Stdout, "%s\n", b)
	case isTerminal(env.Stdout):
		rows := make([][]string, len(list))
		for i, s := range list {
			rows[i] = []string{s.Name, fmt.Sprint(s.Size), s.UpdatedAt}
		}
		writeTable(env.Stdout, []string{"NAME", "SEALED_BYTES", "UPDATED"}, rows)
	default:
		for _, s := range list {
			fmt.Fprintf(env.Stdout, "%s\t%d bytes sealed\tupdated %s\n", s.Name, s.Size, s.UpdatedAt)
		}
	}
}
