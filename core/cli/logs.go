package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"toolhost/core/suggest"
	"toolhost/storage"
)

func runLogs(env *Env, args []string) int {
	fs := newFlags(env, "logs")
	data := addDataFlag(fs, "data `DIR`ectory of the server")
	dbURL := addDBFlag(fs)
	kind := fs.String("kind", "", "system or trace (default: both)")
	asJSON := fs.Bool("json", false, "print one JSON object a line (the default when stdout is not a terminal)")
	pos, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(env.Stderr, "toolhost logs: want one SESSION id\nUsage: "+commands["logs"].usage)
		return ExitUsage
	}
	switch *kind {
	case "", "system", "trace":
	default:
		fmt.Fprintf(env.Stderr, "toolhost logs: --kind must be system or trace, got %q%s\n", *kind, suggest.DidYouMean(*kind, []string{"system", "trace"}))
		return ExitUsage
	}
	db, err := openExistingStore(context.Background(), *data, *dbURL, false)
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
	if !*asJSON && isTerminal(env.Stdout) {
		writeReadableLogs(env.Stdout, entries)
		return ExitOK
	}
	enc := json.NewEncoder(env.Stdout)
	enc.SetEscapeHTML(false)
	for _, e := range entries {
		enc.Encode(e)
	}
	return ExitOK
}

// writeReadableLogs prints log entries for a person: time, kind and event
// in aligned columns, then the entry's data as key=value pairs (nested
// values as compact JSON).
func writeReadableLogs(w io.Writer, entries []storage.LogEntry) {
	kw, ew := 0, 0
	for _, e := range entries {
		kw, ew = max(kw, len(e.Kind)), max(ew, len(e.Event))
	}
	for _, e := range entries {
		fmt.Fprintf(w, "%s  %-*s  %-*s  %s\n", strings.Replace(e.CreatedAt, "T", " ", 1), kw, e.Kind, ew, e.Event, readableData(e.Data))
	}
}

func readableData(raw json.RawMessage) string {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return compactJSON(raw)
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v := obj[k]
		var s string
		if json.Unmarshal(v, &s) == nil && s != "" && !strings.ContainsAny(s, " \t\n\"=") {
			parts = append(parts, k+"="+s)
			continue
		}
		parts = append(parts, k+"="+compactJSON(v))
	}
	return strings.Join(parts, " ")
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}
