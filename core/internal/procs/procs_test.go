package procs

import (
	"context"
	"math"
	"runtime"
	"testing"
	"time"
)

func TestRuleNext(t *testing.T) {
	r := DefaultRule(4)
	for _, tt := range []struct {
		name    string
		procs   int
		windows []Sample // the same rule, one window after another
		want    int
	}{
		{"serial calls stay on one P", 1, []Sample{{Server: 0.8, Idle: 1.0}}, 1},
		{"one saturated P and a CPU idle: a second", 1, []Sample{{Server: 0.95, Idle: 1.0}}, 2},
		{"saturated but the machine is full: no more at once", 1, repeat(Sample{Server: 1.05, Idle: 0.3}, 9), 1},
		{"saturated for a second on a full machine: one more", 1, repeat(Sample{Server: 1.05, Idle: 0.3}, 10), 2},
		{"a window below saturation starts the second again", 1,
			append(append(repeat(Sample{Server: 1.05, Idle: 0.3}, 9), Sample{Server: 0.8, Idle: 0.3}), repeat(Sample{Server: 1.05, Idle: 0.3}, 9)...), 1},
		{"never past Max", 4, []Sample{{Server: 3.9, Idle: 3}}, 4},
		{"up again at once", 2, []Sample{{Server: 1.9, Idle: 1}, {Server: 2.8, Idle: 1}}, 4},
		{"one low window is not enough to go down", 2, []Sample{{Server: 0.2, Idle: 1.5}}, 2},
		{"ten low windows in a row: one P less", 2, repeat(Sample{Server: 0.2, Idle: 1.5}, 10), 1},
		{"a busy window in between starts the count again", 2,
			append(append(repeat(Sample{Server: 0.2, Idle: 1.5}, 9), Sample{Server: 1.2, Idle: 0.5}), repeat(Sample{Server: 0.2, Idle: 1.5}, 9)...), 2},
		{"down one at a time", 4, repeat(Sample{Server: 0.1, Idle: 3}, 25), 2},
		{"never below one", 1, repeat(Sample{}, 20), 1},
		{"a P that would be used under 70% is enough", 3, repeat(Sample{Server: 1.3, Idle: 1}, 10), 2},
		{"more than that is not", 3, repeat(Sample{Server: 1.5, Idle: 1}, 30), 3},
		{"no /proc/stat: the process's own use decides", 1, []Sample{{Server: 0.95, Idle: math.Inf(1)}}, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := State{Procs: tt.procs}
			for _, s := range tt.windows {
				r.Next(&st, s)
			}
			if st.Procs != tt.want {
				t.Fatalf("Ps %d, want %d", st.Procs, tt.want)
			}
		})
	}
}

func repeat(s Sample, n int) []Sample {
	out := make([]Sample, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// TestMeter: a window's Server figure is the CPU the process spent in it,
// and its idle figure the machine's, read from the kernel.
func TestMeter(t *testing.T) {
	m := NewMeter()
	defer m.Close()
	start := time.Now()
	burn := processCPU() + 50*time.Millisecond
	for processCPU() < burn {
	}
	for time.Since(start) < Window/2 {
	}
	s, ok := m.Sample()
	secs := time.Since(start).Seconds()
	if !ok {
		t.Fatal("a window of half Window or more was not measured")
	}
	if used := s.Server * secs; used < 0.045 || used > secs*float64(runtime.NumCPU())+0.02 {
		t.Fatalf("the window shows %.3f s of CPU over %.3f s; 0.05 s were spent", used, secs)
	}
	if math.IsInf(s.Idle, 0) || s.Idle < 0 || s.Idle > float64(runtime.NumCPU())+0.5 {
		t.Fatalf("idle %.2f CPUs of the %d this process may use", s.Idle, runtime.NumCPU())
	}
	if _, ok := m.Sample(); ok {
		t.Fatal("a window of a few microseconds was measured")
	}
}

// TestControl: the controller starts on one P, follows the rule at each
// tick, sets only changes, and stops with its context.
func TestControl(t *testing.T) {
	ticks := make(chan time.Time)
	samples := []Sample{{Server: 0.95, Idle: 1}, {}, {Server: 1.9, Idle: 1}, {Server: 1.9, Idle: 0.1}}
	samples = append(samples, repeat(Sample{Server: 0.3, Idle: 1.5}, 10)...)
	var set []int
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	i := 0
	go func() {
		control(ctx, DefaultRule(3), ticks, func() (Sample, bool) {
			s := samples[i]
			i++
			return s, s != (Sample{}) // an empty one stands for a window too short
		}, func(n int, _ Sample) { set = append(set, n) })
		close(done)
	}()
	for range samples {
		ticks <- time.Now()
	}
	cancel()
	<-done
	if want := []int{1, 2, 3, 2}; len(set) != len(want) || set[0] != 1 || set[1] != 2 || set[2] != 3 || set[3] != 2 {
		t.Fatalf("Ps set %v, want %v", set, want)
	}
}

// TestRunStartsOnOnePAndRestores: Run holds the process at one P while
// its work is light and gives the runtime its default back when it ends;
// a GOMAXPROCS in the environment is left alone.
func TestRunStartsOnOnePAndRestores(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Fatal("this test needs 2 CPUs")
	}
	t.Setenv("GOMAXPROCS", "")
	runtime.SetDefaultGOMAXPROCS()
	def := runtime.GOMAXPROCS(0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { Run(ctx, nil); close(done) }()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.GOMAXPROCS(0) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("GOMAXPROCS %d, want 1", runtime.GOMAXPROCS(0))
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(3 * Window) // idle windows: it stays there
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Fatalf("an idle process went to %d Ps", n)
	}
	cancel()
	<-done
	if n := runtime.GOMAXPROCS(0); n != def {
		t.Fatalf("after Run, GOMAXPROCS %d, want the default %d", n, def)
	}

	t.Setenv("GOMAXPROCS", "2")
	if Controlled() {
		t.Fatal("GOMAXPROCS given in the environment, yet Run would change it")
	}
}
