package cgroupfs

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestFiles(t *testing.T) {
	tests := []struct {
		name, procs, controllers string
		pids                     []int
		ctls                     map[string]bool
	}{
		{"empty", "", "", nil, map[string]bool{}},
		{"some", "12\n7\n", "pids memory\n", []int{12, 7}, map[string]bool{"pids": true, "memory": true}},
		{"junk skipped", "12\nx\n", "cpu", []int{12}, map[string]bool{"cpu": true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(tt.procs), 0o644)
			os.WriteFile(filepath.Join(dir, "cgroup.controllers"), []byte(tt.controllers), 0o644)
			if got := Procs(dir); !reflect.DeepEqual(got, tt.pids) {
				t.Errorf("Procs = %v, want %v", got, tt.pids)
			}
			if got := Controllers(dir); !reflect.DeepEqual(got, tt.ctls) {
				t.Errorf("Controllers = %v, want %v", got, tt.ctls)
			}
		})
	}
	if Procs(filepath.Join(t.TempDir(), "gone")) != nil || len(Controllers("/nonexistent-cgroup")) != 0 {
		t.Error("a missing cgroup reads as something")
	}
}
