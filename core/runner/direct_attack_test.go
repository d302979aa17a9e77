package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"toolhost/plugins"
)

// callWithin runs one attack call and fails the test when it has not
// answered within bound (the call is left running; the group's clean-up
// ends it).
func callWithin(t *testing.T, g *Group, code string, callCtx json.RawMessage, timeout, bound time.Duration) *plugins.CallResponse {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"code": code})
	done := make(chan *plugins.CallResponse, 1)
	go func() {
		done <- g.CallTimeout(context.Background(), impl(g.def, "attack"), args, callCtx, timeout)
	}()
	select {
	case r := <-done:
		return r
	case <-time.After(bound):
		t.Fatalf("the call has not answered after %s (its timeout %s)", bound, timeout)
		return nil
	}
}

// heldAnswerPipe forks a child that leaves the worker's session (so that
// killing the worker's process group misses it) holding a copy of the
// answer pipe (and of the request pipe), then outlives its call.
const heldAnswerPipe = `import os, time
r, w = os.dup(3), os.dup(4)
if os.fork() == 0:
    os.setsid()
    time.sleep(120)
    os._exit(0)
`

// TestHeldAnswerPipeAfterTimeout: a call times out while a process it
// started holds a copy of the worker's answer pipe, in a session of its
// own. The worker is killed, but a read of the answer pipe ends only once
// every writer is gone: the plugin's sweep must kill the holder (and the
// core must not wait on it forever). The call answers a timeout in
// bounded time, and the group serves the next calls.
func TestHeldAnswerPipeAfterTimeout(t *testing.T) {
	for _, viaPlugin := range []bool{false, true} {
		t.Run(fmt.Sprintf("via the plugin %v", viaPlugin), func(t *testing.T) {
			g := open(t, attackYAML, Options{Sandbox: sandbox(t, "deny"), ViaPlugin: viaPlugin, Limits: plugins.Limits{Workers: 1}})
			if got := g.Direct(); got == viaPlugin {
				t.Fatalf("Direct() = %v", got)
			}
			r := callWithin(t, g, heldAnswerPipe+"time.sleep(60)\nout = 'late'", nil, 2*time.Second, 30*time.Second)
			if r.OK || r.Error.Kind != plugins.ErrTimeout {
				t.Fatalf("a call past its timeout: %s %+v", r.Result, r.Error)
			}
			ok := callWithin(t, g, "out = 'still here'", nil, 10*time.Second, 30*time.Second)
			if !ok.OK {
				t.Fatalf("after the timeout: %+v", ok.Error)
			}
		})
	}
}

// liveProcesses lists, from inside the sandbox, the processes that are
// alive (not zombies) other than pid 1, the plugin process and the worker
// running the snippet.
const liveProcesses = `import os
me, parent = os.getpid(), os.getppid()
out = []
for p in os.listdir('/proc'):
    if not p.isdigit() or int(p) in (1, me, parent):
        continue
    try:
        s = open('/proc/%s/stat' % p).read()
    except OSError:
        continue
    if s.rsplit(')', 1)[1].split()[0] not in ('Z', 'X'):
        out.append(int(p))
`

// TestLeftoverSurvivesAKilledWorker: a call leaves a thread (so that its
// worker is killed by the after-call checks) and a process in a session
// of its own. The worker is gone, but the workers' cgroup still holds the
// leftover: the sweep must not count the dead worker among the live ones
// (which would make the cgroup look as if nothing were left). The next
// call must not run beside the leftover.
func TestLeftoverSurvivesAKilledWorker(t *testing.T) {
	leave := map[string]string{
		"a thread": "import threading\nthreading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n",
		"an exit":  "os._exit(0)\n",
	}
	for _, viaPlugin := range []bool{false, true} {
		for name, how := range leave {
			t.Run(fmt.Sprintf("%s via the plugin %v", name, viaPlugin), func(t *testing.T) {
				g := open(t, attackYAML, Options{Sandbox: sandbox(t, "deny"), ViaPlugin: viaPlugin, Limits: plugins.Limits{Workers: 1}})
				code := strings.Replace(heldAnswerPipe, "    time.sleep(120)", "    time.sleep(30)", 1) + how + "out = 'left'"
				r := callWithin(t, g, code, nil, 10*time.Second, 30*time.Second)
				if name == "a thread" && (!r.OK || !strings.Contains(r.Note, "left 1 threads")) {
					t.Fatalf("a call that left a thread: %s %+v note %q", r.Result, r.Error, r.Note)
				}
				p := callWithin(t, g, liveProcesses, nil, 10*time.Second, 30*time.Second)
				if !p.OK || string(p.Result) != "[]" {
					t.Fatalf("the next call runs beside what the last one left: %s %+v", p.Result, p.Error)
				}
			})
		}
	}
}
