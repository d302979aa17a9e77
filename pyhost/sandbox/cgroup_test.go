package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"toolhost/plugins"
)

// TestSettleV2Files checks what the launcher writes once init exists on
// cgroup v2: the controllers it enables for the sandbox's children and
// the workers' limits. No controller can be enabled on this machine's
// cgroup2 mount (they are bound to v1), so the files are checked on a
// stand-in folder tree; core/runner's cgroup_v2_test.go runs the real
// launcher's moves on a real cgroup2 hierarchy.
func TestSettleV2Files(t *testing.T) {
	for _, tt := range []struct {
		name        string
		controllers string
		swap        bool
		cfg         plugins.CgroupV2
		subtree     string
		workers     map[string]string
	}{
		{"pids and memory", "cpu memory pids", true, plugins.CgroupV2{WorkerPids: 64, WorkerMemoryBytes: 1 << 30}, "+pids +memory",
			map[string]string{"pids.max": "64", "memory.max": "1073741824", "memory.swap.max": "0", "memory.oom.group": "1"}},
		{"no swap accounting", "memory pids", false, plugins.CgroupV2{WorkerPids: 8, WorkerMemoryBytes: 1 << 20}, "+pids +memory",
			map[string]string{"pids.max": "8", "memory.max": "1048576", "memory.oom.group": "1"}},
		{"pids only", "pids", false, plugins.CgroupV2{WorkerPids: 8}, "+pids", map[string]string{"pids.max": "8"}},
		{"none", "", false, plugins.CgroupV2{}, "", map[string]string{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			top := t.TempDir()
			workers := filepath.Join(top, "workers")
			for _, d := range []string{filepath.Join(top, "init"), workers} {
				os.Mkdir(d, 0o755)
				os.WriteFile(filepath.Join(d, "cgroup.procs"), nil, 0o644)
			}
			os.WriteFile(filepath.Join(top, "cgroup.procs"), nil, 0o644)
			os.WriteFile(filepath.Join(top, "cgroup.controllers"), []byte(tt.controllers), 0o644)
			if tt.swap {
				os.WriteFile(filepath.Join(workers, "memory.swap.max"), []byte("max"), 0o644)
			}
			cfg := tt.cfg
			cfg.Top = top
			if err := settleV2(&cfg, workers); err != nil {
				t.Fatal(err)
			}
			sub, _ := os.ReadFile(filepath.Join(top, "cgroup.subtree_control"))
			if string(sub) != tt.subtree {
				t.Errorf("subtree_control %q, want %q", sub, tt.subtree)
			}
			entries, _ := os.ReadDir(workers)
			got := map[string]string{}
			for _, e := range entries {
				if !strings.HasPrefix(e.Name(), "cgroup.") {
					b, _ := os.ReadFile(filepath.Join(workers, e.Name()))
					got[e.Name()] = string(b)
				}
			}
			if len(got) != len(tt.workers) {
				t.Errorf("workers' files %v, want %v", got, tt.workers)
			}
			for f, v := range tt.workers {
				if got[f] != v {
					t.Errorf("workers' %s = %q, want %q", f, got[f], v)
				}
			}
		})
	}
}
