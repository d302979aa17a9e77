package main

import (
	"runtime"
	"testing"
	"time"
)

// TestServerSizesItsPs: a server starts its Go scheduler on one P (its
// calls cost less CPU so; core/internal/procs) and reports it in
// go_gomaxprocs, unless GOMAXPROCS was given, which it keeps. (How many
// Ps its work then gets is TestRuleNext's and TestControl's.)
func TestServerSizesItsPs(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Fatal("this test needs 2 CPUs")
	}
	t.Parallel()
	for _, tt := range []struct {
		name string
		env  string
		want int
	}{
		{"sized by the server", "GOMAXPROCS=", 1},
		{"given by the operator", "GOMAXPROCS=2", 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, errs := startServerEnv(t, []string{tt.env}, t.TempDir(), freePort(t))
			got := -1
			if !pollUntil(5*time.Second, func() bool { got = s.metric("go_gomaxprocs"); return got == tt.want }) {
				t.Fatalf("go_gomaxprocs %d, want %d\n%s", got, tt.want, errs.String())
			}
		})
	}
}
