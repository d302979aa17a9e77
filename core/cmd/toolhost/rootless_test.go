package main

import (
	"os"
	"strings"
)

// The hostile tests run twice in make test: as root, and as an ordinary
// user that the rootless run creates (make rootless), where toolhost
// builds its sandboxes from unprivileged user namespaces. Every attack
// must be contained the same way in both; what differs is said by the
// warnings a rootless toolhost prints, and only those.

// rootless reports whether these tests run as an ordinary user.
func rootless() bool { return os.Geteuid() != 0 }

// rootlessWarnings are the sandbox warnings a rootless toolhost prints on
// this machine (cgroup v1, which cannot be delegated to a user): its
// identity is the user's own, and the sandbox's limits are rlimits, not
// cgroups. Both must be there, and nothing else.
var rootlessWarnings = []string{
	"WARNING: sandbox: rootless mode: tool code runs in the sandbox's namespaces as uid 1000 without capabilities, and that uid is your own",
	"WARNING: sandbox: no cgroup limits (pids cgroup, memory cgroup, cpu cgroup, cgroup kill",
}

// rootlessMissing are the mechanisms a rootless toolhost lacks on this
// machine: its own host ids, and the cgroups (v1 cannot be delegated).
var rootlessMissing = map[string]bool{"unprivileged identity": true, "pids cgroup": true, "memory cgroup": true,
	"cpu cgroup": true, "cgroup kill (freezer or cgroup.kill)": true}

// sandboxMissing returns what a command's stderr says of a missing
// sandbox mechanism, or "" when it says nothing it should not: as root no
// sandbox warning at all, rootless exactly rootlessWarnings (or none, when
// the command stopped before it looked for a sandbox: bad arguments).
func sandboxMissing(stderr string) string {
	var warned []string
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(line, "WARNING: sandbox") {
			warned = append(warned, line)
		}
	}
	if !rootless() || len(warned) == 0 {
		return strings.Join(warned, "\n")
	}
	var unexpected []string
	seen := make([]bool, len(rootlessWarnings))
	for _, w := range warned {
		known := false
		for i, want := range rootlessWarnings {
			if strings.Contains(w, want) {
				known, seen[i] = true, true
			}
		}
		if !known {
			unexpected = append(unexpected, w)
		}
	}
	for i, want := range rootlessWarnings {
		if !seen[i] {
			unexpected = append(unexpected, "rootless, this warning is missing: "+want)
		}
	}
	return strings.Join(unexpected, "\n")
}
