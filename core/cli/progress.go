package cli

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"toolhost/core/definition"
	"toolhost/core/requirements"
	"toolhost/core/runner"
)

// Progress on long work: a line with the seconds going by while a group
// that lists a requirements.txt is prepared (its environment installed by
// pip, or found cached), on a terminal only; quiet into a pipe or a file.

// hasRequirements reports whether a group lists a requirements.txt with
// at least one requirement in it (under dir).
func hasRequirements(def *definition.Group, dir string) bool {
	for _, d := range def.Dependencies {
		if path.Base(d.Path) != requirements.FileName {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(d.Path)))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				return true
			}
		}
	}
	return false
}

// installSource says where pip installs from.
func installSource(pk runner.Packages) string {
	switch {
	case pk.Wheelhouse != "":
		return "from the wheelhouse " + pk.Wheelhouse
	case pk.IndexURL != "":
		return "from " + pk.IndexURL
	}
	return "with pip's own configuration (no --wheelhouse nor --index-url)"
}

// startProgress shows, on a terminal (stderr), what cmd is doing and for
// how long, until the returned stop is called; it does nothing when the
// group has no requirements or stderr is not a terminal.
func startProgress(env *Env, cmd string, def *definition.Group, dir string, pk runner.Packages) (stop func()) {
	if !isTerminal(env.Stderr) || !hasRequirements(def, dir) {
		return func() {}
	}
	what := fmt.Sprintf("toolhost %s: %s: installing requirements.txt %s, unless its environment is cached", cmd, def.Name, installSource(pk))
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		fmt.Fprintf(env.Stderr, "%s ...", what)
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(env.Stderr, "\r\033[K%s ... %ds", what, int(time.Since(start).Seconds()))
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		fmt.Fprintf(env.Stderr, "\r\033[K%s: %.1fs\n", what, time.Since(start).Seconds())
	}
}

// condenseInstallError shortens a failed pip install's message: pip's
// "WARNING: Retrying ..." lines become one count, and when pip found no
// package (no index reachable, or none has it) the hint says how to
// install offline or from an index.
func condenseInstallError(msg string, pk runner.Packages) string {
	head, out, ok := strings.Cut(msg, "pip said:\n")
	if !ok {
		return msg
	}
	var kept []string
	retries := 0
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(strings.TrimSpace(l), "WARNING: Retrying"):
			retries++
		case strings.TrimSpace(l) != "":
			kept = append(kept, l)
		}
	}
	var b strings.Builder
	b.WriteString(head + "pip said:\n")
	if retries > 0 {
		fmt.Fprintf(&b, "(%d retries: no package index could be reached)\n", retries)
	}
	for _, l := range kept {
		b.WriteString(l + "\n")
	}
	notFound := strings.Contains(out, "No matching distribution found") || strings.Contains(out, "Could not find a version")
	if pk.Wheelhouse == "" && (retries > 0 || notFound) {
		b.WriteString("hint: tool code's sandbox has no network unless an index is configured; give --wheelhouse DIR (a folder of wheels; $TOOLHOST_WHEELHOUSE) to install offline, or --index-url URL ($TOOLHOST_INDEX_URL) for an index this machine reaches\n")
	} else if pk.Wheelhouse != "" && notFound {
		fmt.Fprintf(&b, "hint: the wheelhouse %s has no wheel for a requirement (only wheels are installed, never source distributions)\n", pk.Wheelhouse)
	}
	return strings.TrimRight(b.String(), "\n")
}
