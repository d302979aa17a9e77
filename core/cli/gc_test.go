package cli

import "testing"

// TestGCMemoryLimit: the server's soft memory limit is a quarter of the
// machine (at least 512 MiB) but never more than half of what a
// container's cgroup lets the process use.
func TestGCMemoryLimit(t *testing.T) {
	const mib, gib = int64(1 << 20), int64(1 << 30)
	for _, tt := range []struct {
		name             string
		machine, allowed int64
		want             int64
	}{
		{"a machine, no cgroup limit", 24 * gib, 24 * gib, 6 * gib},
		{"a small machine", 1 * gib, 1 * gib, 512 * mib},
		{"a container of 1 GiB on a large machine", 64 * gib, 1 * gib, 512 * mib},
		{"a container of 512 MiB", 64 * gib, 512 * mib, 256 * mib},
		{"the limit unknown", 8 * gib, 0, 2 * gib},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := gcMemoryLimit(tt.machine, tt.allowed); got != tt.want {
				t.Errorf("gcMemoryLimit(%d, %d) = %d MiB, want %d MiB", tt.machine, tt.allowed, got/mib, tt.want/mib)
			}
		})
	}
}
