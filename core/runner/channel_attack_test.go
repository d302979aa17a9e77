package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"toolhost/plugins"
)

// Red-team attacks of tool code on the data channel (plugins/channel)
// between the core and its plugin process, through real sandboxes.

// TestToolCodeCannotReachTheDataChannel: the plugin's end of the channel
// is inherited by the launcher (on the host), init and the plugin
// process; no worker, no process a tool starts, and no trick of tool code
// on the plugin process's or init's descriptors gets hold of it.
func TestToolCodeCannotReachTheDataChannel(t *testing.T) {
	g := open(t, attackYAML, Options{Sandbox: sandbox(t, "deny")})
	const sockets = "import os\ndef sockets(pid='self'):\n    d = '/proc/%s/fd' % pid\n    out = []\n    for f in os.listdir(d):\n        try:\n            if os.readlink(d + '/' + f).startswith('socket:'):\n                out.append(f)\n        except OSError:\n            pass\n    return out\n"
	const sc = "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\ndef sc(nr, *a):\n    r = libc.syscall(nr, *[ctypes.c_long(x) for x in a])\n    return os.strerror(ctypes.get_errno()) if r == -1 else r\n"
	runAttacks(t, g, []attackCase{
		{name: "sockets among the worker's descriptors", code: sockets + "out = sockets()", want: `[]`},
		{name: "sockets among a child process's descriptors",
			code: "import subprocess, sys\nout = subprocess.run([sys.executable, '-c', " + strconv.Quote(sockets+"print(sockets())") + "], capture_output=True, text=True).stdout.strip()",
			want: `"[]"`},
		{name: "sockets of a process started with every descriptor kept (close_fds=False)",
			code: "import subprocess, sys\nout = subprocess.run([sys.executable, '-c', " + strconv.Quote(sockets+"print(sockets())") + "], capture_output=True, text=True, close_fds=False).stdout.strip()",
			want: `"[]"`},
		{name: "the plugin process's descriptors through /proc", code: "import os\nout = os.listdir('/proc/%d/fd' % os.getppid())", fails: "PermissionError"},
		{name: "the plugin process's descriptor 3 opened through /proc", code: "import os\nout = os.open('/proc/%d/fd/3' % os.getppid(), os.O_RDWR)", fails: "PermissionError"},
		{name: "init's descriptors through /proc", code: "import os\nout = os.listdir('/proc/1/fd')", fails: "PermissionError"},
		{name: "init's descriptor 5 opened through /proc", code: "import os\nout = os.open('/proc/1/fd/5', os.O_RDWR)", fails: "PermissionError|FileNotFoundError"},
		// pidfd_open (434) is allowed, pidfd_getfd (438) refused: every
		// descriptor of the plugin process and of init stays out of reach.
		{name: "pidfd_getfd of every low descriptor of the plugin process and init",
			code: sc + "out = sorted(set(str(sc(438, sc(434, pid, 0), fd, 0)) for pid in (os.getppid(), 1) for fd in range(64)))",
			want: `["Operation not permitted"]`},
	})
}

// TestDataChannelCarriesHostileSizes: a cpython tool returns a result of <
// at the result limit (HTML: Go's encoder would write each as six bytes)
// and sends toolhost.call_tool arguments of < filling the worker's frame;
// both cross to the core, and a call beside them is not failed by a
// channel that ended.
func TestDataChannelCarriesHostileSizes(t *testing.T) {
	for _, viaPlugin := range []bool{true, false} {
		t.Run(fmt.Sprintf("via the plugin %v", viaPlugin), func(t *testing.T) { hostileSizes(t, viaPlugin) })
	}
}

func hostileSizes(t *testing.T, viaPlugin bool) {
	limits := plugins.Limits{}.WithDefaults()
	g := open(t, attackYAML, Options{Sandbox: sandbox(t, "deny"), Timeout: 20 * time.Second, ViaPlugin: viaPlugin,
		OnToolCall: func(_ context.Context, _ *Caller, req *plugins.ToolCallRequest) *plugins.ToolCallResponse {
			return &plugins.ToolCallResponse{Answer: json.RawMessage(strconv.Itoa(len(req.Args)))}
		}})
	tests := []struct{ name, code, want string }{
		{"a result of < at the result limit", fmt.Sprintf("out = '<' * %d", limits.ResultBytes-2), `"<<<<`},
		{"a result of & and > at the result limit", fmt.Sprintf("out = '&>' * %d", (limits.ResultBytes-2)/2), `"&>&>`},
		{"call_tool arguments of < filling the worker's frame", fmt.Sprintf("import toolhost\nout = toolhost.call_tool('x', {'a': '<' * %d})", limits.AnswerBytes()-4096), strconv.Itoa(limits.AnswerBytes() - 4096 + 8)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var wg sync.WaitGroup
			var beside *plugins.CallResponse
			wg.Add(1)
			go func() {
				defer wg.Done()
				beside = attack(t, g, "import time\ntime.sleep(1)\nout = 'beside'")
			}()
			time.Sleep(200 * time.Millisecond)
			r := attack(t, g, tt.code)
			wg.Wait()
			if !r.OK || !strings.HasPrefix(string(r.Result), tt.want) {
				t.Errorf("THE CALL FAILED: %.200s %+v", r.Result, r.Error)
			}
			if !beside.OK {
				t.Errorf("THE CALL BESIDE IT FAILED: %+v", beside.Error)
			}
		})
	}
}

// TestStoppedPluginWithAFullChannel: tool code stops its plugin process
// (SIGSTOP), and calls keep coming with arguments that fill the channel's
// socket buffer. Every call returns in bounded time (its timeout and the
// grace period), the process is replaced, and the next call works. A
// write to a channel nobody reads must not hold a caller, nor the cancel
// of a caller whose deadline came.
// (Through the plugin process: on the direct path a stopped plugin
// process is not on the way of a call; TestStoppedPluginIsReplaced covers
// both paths.)
func TestStoppedPluginWithAFullChannel(t *testing.T) {
	g := open(t, attackYAML, Options{Sandbox: sandbox(t, "deny"), Timeout: time.Second, ViaPlugin: true})
	start := time.Now()
	var wg sync.WaitGroup
	results := make([]*plugins.CallResponse, 4)
	run := func(i int, code string) {
		defer wg.Done()
		args, _ := json.Marshal(map[string]string{"code": code})
		results[i] = g.CallTimeout(context.Background(), impl(g.def, "attack"), args, nil, time.Second)
	}
	wg.Add(1)
	go run(0, "import os, signal, time\nos.kill(os.getppid(), signal.SIGSTOP)\ntime.sleep(0.5)\nout = 'answered'")
	time.Sleep(300 * time.Millisecond)
	for i := 1; i < len(results); i++ {
		wg.Add(1)
		go run(i, "out = 1\n#"+strings.Repeat("x", 2<<20))
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("CALLS TO A STOPPED PLUGIN PROCESS HANG past their timeouts")
	}
	for i, r := range results {
		if r.OK && i == 0 {
			t.Errorf("call %d answered from a stopped process: %s", i, r.Result)
		}
	}
	if ok := attack(t, g, "out = 1"); !ok.OK {
		t.Fatalf("after the stopped plugin process: %+v", ok.Error)
	}
	if d := time.Since(start); d > 25*time.Second {
		t.Errorf("the calls and the replacement took %s", d)
	}
}

// TestConcurrentCallsWithCancellations: calls of one group run at once,
// some of their callers going away at random moments; each call that
// completes gets its own answer, each cancelled one is told so, and the
// group carries on.
func TestConcurrentCallsWithCancellations(t *testing.T) {
	for _, viaPlugin := range []bool{true, false} {
		t.Run(fmt.Sprintf("via the plugin %v", viaPlugin), func(t *testing.T) { concurrentCancellations(t, viaPlugin) })
	}
}

func concurrentCancellations(t *testing.T, viaPlugin bool) {
	g := open(t, attackYAML, Options{Sandbox: sandbox(t, "deny"), Timeout: 20 * time.Second, ViaPlugin: viaPlugin})
	const n = 24
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if i%3 == 0 {
				time.AfterFunc(time.Duration(50+i*20)*time.Millisecond, cancel)
			}
			args, _ := json.Marshal(map[string]string{"code": fmt.Sprintf("import time\ntime.sleep(%g)\nout = %d", float64(i%5)/10, i)})
			r := g.CallTimeout(ctx, impl(g.def, "attack"), args, nil, 20*time.Second)
			switch {
			case r.OK && string(r.Result) != strconv.Itoa(i):
				t.Errorf("CALL %d GOT ANOTHER CALL'S ANSWER: %s", i, r.Result)
			case !r.OK && (i%3 != 0 || r.Error.Kind != plugins.ErrCancelled):
				t.Errorf("call %d: %+v", i, r.Error)
			}
		}()
	}
	wg.Wait()
	if r := attack(t, g, "out = 'after'"); !r.OK {
		t.Fatalf("after the calls: %+v", r.Error)
	}
}

// TestGPythonToolCallEndsWithItsCall: gpython code that waits in
// toolhost.call_tool when its call's timeout comes (or its caller goes
// away) must not keep the nested call running on the core: the nested
// call's context ends with the call that asked.
func TestGPythonToolCallEndsWithItsCall(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "n.py"), []byte("import toolhost\n\ndef outer():\n    return toolhost.call_tool('slow', {})\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "n.yaml"), []byte(`kind: Plugin
name: N
description: nested
dependencies: [n.py]
tools:
  - {kind: Tool, object_name: Outer, name: outer, description: d, implementation: n.outer, parameters: []}
`), 0o644)
	ended := make(chan time.Time, 4)
	started := make(chan struct{}, 4)
	g := open(t, filepath.Join(dir, "n.yaml"), Options{Runtime: plugins.RuntimeGPython, Sandbox: sandbox(t, "deny"), Timeout: time.Second,
		OnToolCall: func(ctx context.Context, _ *Caller, _ *plugins.ToolCallRequest) *plugins.ToolCallResponse {
			started <- struct{}{}
			select {
			case <-ctx.Done():
			case <-time.After(time.Minute):
			}
			ended <- time.Now()
			return &plugins.ToolCallResponse{Error: "ended"}
		}})
	for _, how := range []string{"timeout", "caller gone"} {
		t.Run(how, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if how == "caller gone" {
				// The caller goes 300 ms into the nested call. (The timeout
				// before replaced the plugin process: on a loaded machine
				// its new start alone may take 300 ms, and a cancel then
				// ends the call before anything is nested.)
				for len(started) > 0 {
					<-started
				}
				go func() {
					select {
					case <-started:
						time.Sleep(300 * time.Millisecond)
					case <-ctx.Done():
					}
					cancel()
				}()
			}
			start := time.Now()
			r := g.CallTimeout(ctx, impl(g.def, "outer"), json.RawMessage(`{}`), nil, time.Second)
			if r.OK {
				t.Fatalf("the call answered: %s", r.Result)
			}
			select {
			case at := <-ended:
				if d := at.Sub(start); d > 3*time.Second {
					t.Errorf("the nested call ended %s after its call started", d)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("THE NESTED CALL RUNS ON after its call ended (%s: %+v)", how, r.Error)
			}
		})
	}
}

// TestRefusedToolCallsArePaced (issue 25, point 10): a worker looping over
// refused toolhost.call_tool requests is paced by the refusals (each
// answered after refusedToolCallDelay): in one second it gets at most a
// second's worth of them, and the core serves as few (before, about
// 20,000 a second, 2.5-3 CPU-seconds of the core in 5 s). A noisy machine
// only makes the count smaller.
func TestRefusedToolCallsArePaced(t *testing.T) {
	for _, viaPlugin := range []bool{false, true} {
		t.Run(fmt.Sprintf("via the plugin %v", viaPlugin), func(t *testing.T) {
			var served atomic.Int64
			g := open(t, attackYAML, Options{Sandbox: sandbox(t, "deny"), Timeout: 20 * time.Second, ViaPlugin: viaPlugin,
				OnToolCall: func(_ context.Context, _ *Caller, _ *plugins.ToolCallRequest) *plugins.ToolCallResponse {
					served.Add(1)
					return &plugins.ToolCallResponse{Error: "no such tool"}
				}})
			r := attack(t, g, "import time, toolhost\nn = 0\nend = time.time() + 1\nwhile time.time() < end:\n"+
				"    try:\n        toolhost.call_tool('nope')\n    except Exception:\n        pass\n    n += 1\nout = n")
			if !r.OK {
				t.Fatalf("the loop: %+v", r.Error)
			}
			n, _ := strconv.Atoi(string(r.Result))
			limit := int(time.Second/refusedToolCallDelay) + 5
			if n > limit || served.Load() > int64(limit) {
				t.Errorf("%d refused call_tool requests in one second (%d served), want at most %d", n, served.Load(), limit)
			}
			if n < 1 {
				t.Errorf("no call_tool was refused: %d", n)
			}
		})
	}
}
