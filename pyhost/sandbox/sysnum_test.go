package sandbox

import (
	"runtime"
	"sort"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
)

// TestSyscallTables checks the generated system call tables (go generate
// in this folder) against go-seccomp-bpf's, from which they are made:
// every name and number of this architecture, its audit architecture,
// and whether the x32 bit is refused.
func TestSyscallTables(t *testing.T) {
	info, err := arch.GetInfo("")
	if err != nil {
		t.Skipf("go-seccomp-bpf has no table for %s either", runtime.GOARCH)
	}
	if uint32(info.ID) != auditArch || (info == arch.X86_64) != onX86_64 {
		t.Fatalf("audit arch %#x, x86_64 %v; the library says %#x, %v", auditArch, onX86_64, uint32(info.ID), info == arch.X86_64)
	}
	if len(sysnums) != len(info.SyscallNames) {
		t.Errorf("%d system calls, the library has %d: run go generate", len(sysnums), len(info.SyscallNames))
	}
	if !sort.SliceIsSorted(sysnums[:], func(i, j int) bool { return sysnums[i].name < sysnums[j].name }) {
		t.Error("the table is not sorted by name: syscallNumber's search would miss names")
	}
	for name, want := range info.SyscallNames {
		if got, ok := syscallNumber(name); !ok || got != want {
			t.Errorf("%s: %d %v, the library says %d", name, got, ok, want)
		}
	}
	for _, name := range []string{"", "no_such_call", "zzz"} {
		if n, ok := syscallNumber(name); ok {
			t.Errorf("%q found as %d", name, n)
		}
	}
}
