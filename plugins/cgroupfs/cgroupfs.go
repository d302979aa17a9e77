// Package cgroupfs reads the files of a cgroup folder that both the core
// (which makes a sandbox's cgroups) and the sandbox's launcher (which
// places its processes in them on cgroup v2) read.
package cgroupfs

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Procs lists the processes of the cgroup at dir (its cgroup.procs); nil
// when it cannot be read.
func Procs(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Controllers are the controllers the cgroup v2 folder dir may enable for
// its children (its cgroup.controllers); empty when it cannot be read.
func Controllers(dir string) map[string]bool {
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	out := map[string]bool{}
	for _, c := range strings.Fields(string(b)) {
		out[c] = true
	}
	return out
}
