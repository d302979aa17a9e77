package runner

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// MemoryLimit is the memory this process may use: the machine's, or less
// when its cgroup or one above it has a memory limit (a container's), on
// cgroup v2 (memory.max) or v1 (memory.limit_in_bytes).
func MemoryLimit() int64 {
	if cgroupV2() {
		own, err := ownCgroup()
		if err != nil {
			return memTotal()
		}
		return v2MemoryLimit(filepath.Join(cgroupRoot, own))
	}
	limit := memTotal()
	b, _ := os.ReadFile("/proc/self/cgroup")
	for _, line := range strings.Split(string(b), "\n") {
		// hierarchy-id:controllers:path, the memory hierarchy's.
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || !containsWord(f[1], "memory") {
			continue
		}
		base := filepath.Join(cgroupRoot, "memory")
		for d := filepath.Join(base, f[2]); strings.HasPrefix(d, base); d = filepath.Dir(d) {
			b, err := os.ReadFile(filepath.Join(d, "memory.limit_in_bytes"))
			if v, perr := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && perr == nil && v > 0 && v < limit {
				limit = v
			}
			if d == base {
				break
			}
		}
	}
	return limit
}

// containsWord reports whether list, words separated by commas, has w.
func containsWord(list, w string) bool {
	for _, x := range strings.Split(list, ",") {
		if x == w {
			return true
		}
	}
	return false
}
