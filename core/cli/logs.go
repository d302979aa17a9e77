package cli

import (
	"context"
	"encoding/json"
	"fmt"
)

func runLogs(env *Env, args []string) int {
	fs := newFlags(env, "logs")
	data := fs.String("data", "./data", "data `DIR`ectory of the server")
	dbURL := addDBFlag(fs)
	kind := fs.String("kind", "", "system or trace (default: both)")
	pos, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(env.Stderr, "toolhost logs: want one SESSION id")
		return ExitUsage
	}
	switch *kind {
	case "", "system", "trace":
	default:
		fmt.Fprintf(env.Stderr, "toolhost logs: --kind must be system or trace, got %q\n", *kind)
		return ExitUsage
	}
	db, err := openStore(context.Background(), *data, *dbURL)
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost logs: %v\n", err)
		return ExitFailure
	}
	defer db.Close()
	ctx := context.Background()
	tenant, err := db.SessionTenant(ctx, pos[0])
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost logs: session %q: %v\n", pos[0], err)
		return ExitFailure
	}
	entries, err := db.LogView(ctx, tenant, pos[0], *kind)
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost logs: %v\n", err)
		return ExitFailure
	}
	enc := json.NewEncoder(env.Stdout)
	enc.SetEscapeHTML(false)
	for _, e := range entries {
		enc.Encode(e)
	}
	return ExitOK
}
