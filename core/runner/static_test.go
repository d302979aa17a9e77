package runner

import (
	"debug/elf"
	"os"
	"path/filepath"
	"testing"
)

// TestHelpersAreStatic: the sandbox's helper and the plugin process are
// linked statically, as the Makefile and the tests build them: no
// dynamic loader, no libc mapped at each of their starts (two per
// sandbox: about 2 ms of CPU each where a page fault costs ~30 µs). A
// dynamically linked binary names its loader in a PT_INTERP header. Under
// the race detector (which needs cgo) they are dynamic.
func TestHelpersAreStatic(t *testing.T) {
	if os.Getenv("TOOLHOST_TEST_RACE") != "" {
		t.Skip("make race links the helpers with cgo, for the race detector")
	}
	for _, name := range []string{HelperName, PluginHelperName, CPythonHelperName} {
		path := filepath.Join(filepath.Dir(toolhostBin), name)
		f, err := elf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s is linked dynamically (it has a PT_INTERP header); build it with CGO_ENABLED=0", name)
			}
		}
		f.Close()
	}
}
