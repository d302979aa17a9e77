package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMemoryLimit: on this machine's own hierarchies the limit is at most
// the machine's memory; on a stand-in of the v1 memory hierarchy, a limit
// on this process's cgroup or one above it is what counts.
func TestMemoryLimit(t *testing.T) {
	if got := MemoryLimit(); got <= 0 || got > memTotal() {
		t.Errorf("MemoryLimit() = %d, machine %d", got, memTotal())
	}
	if cgroupV2() {
		return
	}
	b, _ := os.ReadFile("/proc/self/cgroup")
	own := ""
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.SplitN(line, ":", 3); len(f) == 3 && containsWord(f[1], "memory") {
			own = f[2]
		}
	}
	if own == "" {
		t.Skip("no v1 memory hierarchy for this process")
	}
	root := t.TempDir()
	old := cgroupRoot
	cgroupRoot = root
	defer func() { cgroupRoot = old }()
	dir := filepath.Join(root, "memory", own)
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(root, "memory", "memory.limit_in_bytes"), []byte("9223372036854771712\n"), 0o644)
	if got := MemoryLimit(); got != memTotal() {
		t.Errorf("no limit: %d, want the machine's %d", got, memTotal())
	}
	os.WriteFile(filepath.Join(dir, "memory.limit_in_bytes"), []byte("268435456\n"), 0o644)
	if got := MemoryLimit(); got != 256<<20 {
		t.Errorf("a limit of 256 MiB on the own cgroup: %d", got)
	}
}
