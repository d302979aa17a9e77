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
			t.Parallel() // a group of its own; its calls mostly wait
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
				t.Parallel() // a group of its own; its calls mostly wait
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

// spyOn is Python that defines spy(), a loop that copies the context of
// every call it can see into scratch.
const spyOn = `import json, threading, time, toolhost
def spy():
    while True:
        seen = toolhost._context_getter()
        if seen:
            with open('spied.txt', 'a') as f:
                f.write(json.dumps(seen) + '\n')
        time.sleep(0.002)
`

// TestNothingStartsBetweenCalls: code of a call that starts a thread only
// once its call has answered, and the after-call checks have passed: from
// a timer's signal handler, or from a patched runner loop. The worker is
// idle with a thread of tool code: it must not serve the next call (of
// another session), whose context the spy would copy.
func TestNothingStartsBetweenCalls(t *testing.T) {
	later := map[string]string{
		"a timer": spyOn + `import signal
signal.signal(signal.SIGALRM, lambda *a: threading.Thread(target=spy, daemon=True).start())
signal.setitimer(signal.ITIMER_REAL, 0.3)
out = 'armed'`,
		"a patched runner loop": spyOn + `import __main__
read = __main__.read_frame
def patched(done=[]):
    if not done:
        done.append(1)
        time.sleep(0.3)
        threading.Thread(target=spy, daemon=True).start()
    return read()
__main__.read_frame = patched
out = 'armed'`,
		// A process forked there reads the next request from a copy of the
		// request pipe (the worker waits for it) and forges its answer, then
		// exits before the call ends: the after-call checks see nothing.
		"a timer's process that answers the next call": spyOn + `import os, signal, struct
def steal():
    r, w = os.dup(3), os.dup(4)
    pid = os.fork()
    if pid == 0:
        n = struct.unpack('>I', os.read(r, 4))[0]
        body = b''
        while len(body) < n:
            body += os.read(r, n - len(body))
        req = json.loads(body)
        with open('spied.txt', 'a') as f:
            f.write(json.dumps(req.get('context')) + '\n')
        a = json.dumps({'id': req['id'], 'ok': True, 'result': 'forged', 'output': '', 'output_truncated': False}).encode()
        os.write(w, struct.pack('>I', len(a)) + a)
        os._exit(0)
    os.waitpid(pid, 0)
signal.signal(signal.SIGALRM, lambda *a: steal())
signal.setitimer(signal.ITIMER_REAL, 0.3)
out = 'armed'`,
	}
	for _, viaPlugin := range []bool{false, true} {
		for name, code := range later {
			t.Run(fmt.Sprintf("%s via the plugin %v", name, viaPlugin), func(t *testing.T) {
				g := open(t, attackYAML, Options{Sandbox: sandbox(t, "deny"), ViaPlugin: viaPlugin, Limits: plugins.Limits{Workers: 1}})
				if r := callWithin(t, g, code, nil, 10*time.Second, 30*time.Second); !r.OK {
					t.Fatalf("arm: %+v", r.Error)
				}
				time.Sleep(time.Second)
				next := json.RawMessage(`{"session_id":"next","variables":{"secret":"n3xt"}}`)
				if r := callWithin(t, g, "import time\ntime.sleep(0.2)\nout = 1", next, 10*time.Second, 30*time.Second); !r.OK || string(r.Result) != "1" {
					t.Fatalf("the next call: %s %+v", r.Result, r.Error)
				}
				s := callWithin(t, g, "import os\nout = open('spied.txt').read() if os.path.exists('spied.txt') else ''", nil, 10*time.Second, 30*time.Second)
				if !s.OK || string(s.Result) != `""` {
					t.Fatalf("something started between calls saw the next call: %.200s %+v", s.Result, s.Error)
				}
			})
		}
	}
}

// TestWorkersCannotReadEachOther: two calls of the group run at once, on
// two workers (two sessions). The worker processes run as the same user,
// and ptrace is refused, but /proc/PID/mem asks only the ptrace access
// check, which a process of the same user passes while it is dumpable:
// the one call must not read the other's memory (its arguments, its
// context), or write it.
func TestWorkersCannotReadEachOther(t *testing.T) {
	g := open(t, attackYAML, Options{Sandbox: sandbox(t, "deny"), Limits: plugins.Limits{Workers: 2}})
	victim := make(chan *plugins.CallResponse, 1)
	go func() {
		victim <- callWithin(t, g, "import time\nsecret = 'vict' + 'im-s3cr3t'\ntime.sleep(4)\nout = len(secret)", nil, 20*time.Second, 40*time.Second)
	}()
	time.Sleep(time.Second)
	r := callWithin(t, g, `import os, re
me, parent = os.getpid(), os.getppid()
out = []
for p in os.listdir('/proc'):
    if not p.isdigit() or int(p) in (1, me, parent):
        continue
    try:
        mem = open('/proc/%s/mem' % p, 'rb')
        for line in open('/proc/%s/maps' % p):
            m = re.match(r'([0-9a-f]+)-([0-9a-f]+) rw', line)
            if not m:
                continue
            start, end = int(m.group(1), 16), int(m.group(2), 16)
            try:
                mem.seek(start)
                if b'victim-s3cr3t' in mem.read(min(end - start, 64 << 20)):
                    out.append('read the secret of worker %s' % p)
            except OSError:
                pass
    except OSError as e:
        out.append('worker %s: %s' % (p, e.strerror))
`, nil, 20*time.Second, 40*time.Second)
	v := <-victim
	if !v.OK || r == nil || !r.OK {
		t.Fatalf("the calls: %+v / %+v", v.Error, r.Error)
	}
	if strings.Contains(string(r.Result), "read the secret") {
		t.Fatalf("one worker read another's memory: %s", r.Result)
	}
}

// TestDirectPathWithoutCgroups: where a sandbox has no workers' cgroup
// (rootless without a delegated cgroup), the direct path reads the
// sandbox's processes after each call instead (direct.cleanByProc). What a
// call leaves is found all the same, the worker replaced, and the next
// call runs alone: a child still running, a daemon that double-forked
// (init's orphan), a thread; a call that leaves nothing keeps its worker.
func TestDirectPathWithoutCgroups(t *testing.T) {
	sb := without(sandbox(t, "deny"), plugins.MechPids, plugins.MechMemory, plugins.MechCPU, plugins.MechKill)
	leave := []struct{ name, code, note string }{
		{"a child", "import subprocess\nsubprocess.Popen(['sleep', '30'])\n", "processes behind"},
		{"a daemon", "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        time.sleep(30)\n    os._exit(0)\nos.wait()\n", "processes behind"},
		{"a thread", "import threading\nthreading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n", "left 1 threads"},
	}
	for _, c := range leave {
		t.Run(c.name, func(t *testing.T) {
			g := open(t, attackYAML, Options{Sandbox: sb, Limits: plugins.Limits{Workers: 1}})
			if !g.Direct() {
				t.Fatal("a sandboxed cpython group without cgroups is not on the direct path")
			}
			first := callWithin(t, g, "out = 'clean'", nil, 10*time.Second, 30*time.Second)
			again := callWithin(t, g, "out = 'clean'", nil, 10*time.Second, 30*time.Second)
			if !first.OK || !again.OK || first.Worker != again.Worker || again.Note != "" {
				t.Fatalf("a call that left nothing did not keep its worker: %+v %+v", first, again)
			}
			r := callWithin(t, g, "import os, time\n"+c.code+"out = 'left'", nil, 10*time.Second, 30*time.Second)
			if !r.OK || !strings.Contains(r.Note, c.note) {
				t.Fatalf("a call that left %s: %s %+v note %q", c.name, r.Result, r.Error, r.Note)
			}
			p := callWithin(t, g, liveProcesses, nil, 10*time.Second, 30*time.Second)
			if !p.OK || string(p.Result) != "[]" || p.Worker == r.Worker {
				t.Fatalf("the next call runs beside what the last one left, or on its worker: %s %+v (worker %d, was %d)", p.Result, p.Error, p.Worker, r.Worker)
			}
		})
	}
}

// TestBytesAfterTheAnswer: tool code that writes to the worker's answer
// pipe after its answer. Right after it, in the same write (a patched
// runner; the answer is past the core's first read of 4 KiB, so that the
// core reads the answer's frame to its end and the bytes after it stay on
// the pipe), the call fails as not the worker's answer, its worker is
// replaced, and the next call answers on a new one; later, between calls
// (a timer's signal handler), the next call goes to a new worker and says
// why. On the direct path the core asks the pipe after the answer and
// before each call in the poll of the workers' pidfds (no FIONREAD of its
// own): without the check after the answer the call answered success.
func TestBytesAfterTheAnswer(t *testing.T) {
	const trailing = `import __main__
RESP = __main__.RESP
class Trailing:
    def write(self, b):
        RESP.write(b + b'\x00\x00\x00\x02{}')
        return len(b)
__main__.RESP = Trailing()
out = 'x' * 10000`
	const timer = `import os, signal
signal.signal(signal.SIGALRM, lambda *a: os.write(4, b'\x00\x00\x00\x02{}'))
signal.setitimer(signal.ITIMER_REAL, 0.2)
out = 'armed'`
	for _, viaPlugin := range []bool{false, true} {
		t.Run(fmt.Sprintf("right after the answer, via the plugin %v", viaPlugin), func(t *testing.T) {
			t.Parallel()
			g := open(t, attackYAML, Options{Sandbox: sandbox(t, "deny"), ViaPlugin: viaPlugin, Limits: plugins.Limits{Workers: 1}})
			for round := 0; round < 5; round++ {
				r := callWithin(t, g, trailing, nil, 10*time.Second, 30*time.Second)
				if r.OK || r.Error.Kind != plugins.ErrCrash || !strings.Contains(r.Error.Message, "does not belong to the call") {
					t.Fatalf("round %d: a call whose worker wrote after its answer: OK %v %+v", round, r.OK, r.Error)
				}
				if n := callWithin(t, g, "out = 1", nil, 10*time.Second, 30*time.Second); !n.OK || string(n.Result) != "1" || n.Worker == r.Worker {
					t.Fatalf("round %d: the next call (worker %d after %d): %s %+v", round, n.Worker, r.Worker, n.Result, n.Error)
				}
			}
		})
	}
	t.Run("between calls, direct", func(t *testing.T) {
		t.Parallel()
		g := open(t, attackYAML, Options{Sandbox: sandbox(t, "deny"), Limits: plugins.Limits{Workers: 1}})
		r := callWithin(t, g, timer, nil, 10*time.Second, 30*time.Second)
		if !r.OK {
			t.Fatalf("arm: %+v", r.Error)
		}
		time.Sleep(600 * time.Millisecond)
		n := callWithin(t, g, "import os\nout = os.getpid()", nil, 10*time.Second, 30*time.Second)
		if !n.OK || !strings.Contains(n.Note, "wrote to its answer pipe between calls; it was replaced") {
			t.Fatalf("the call after bytes between calls: %s %+v (note %q)", n.Result, n.Error, n.Note)
		}
		if n.Worker == r.Worker {
			t.Errorf("the call after bytes between calls ran on worker %d again", n.Worker)
		}
	})
}
