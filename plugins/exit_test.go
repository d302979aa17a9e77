package plugins

import (
	"os/exec"
	"testing"
)

func TestExitStatus(t *testing.T) {
	tests := []struct {
		script, want string
	}{
		{"exit 0", "exited with status 0"},
		{"exit 3", "exited with status 3"},
		{"kill -9 $$", "was killed by signal 9 (killed)"},
		{"kill -11 $$", "was killed by signal 11 (segmentation fault)"},
	}
	for _, tt := range tests {
		cmd := exec.Command("sh", "-c", tt.script)
		cmd.Run()
		if got := ExitStatus(cmd.ProcessState); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.script, got, tt.want)
		}
	}
}
