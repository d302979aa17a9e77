package channel

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"toolhost/plugins"
	"toolhost/plugins/frame"
)

// pair starts a Client and a Server on a real socketpair; run is the
// server's runtime.
func pair(t testing.TB, cb plugins.Callbacks, run func(context.Context, *Server, *plugins.CallRequest) *plugins.CallResponse) (*Client, *Server) {
	return boundPair(t, 1<<20, 0, cb, run)
}

// boundPair is pair with the client's bound on frames and the server's
// bound on its answers (0: none).
func boundPair(t testing.TB, clientMax, serverMax int, cb plugins.Callbacks, run func(context.Context, *Server, *plugins.CallRequest) *plugins.CallResponse) (*Client, *Server) {
	t.Helper()
	core, plug, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	var s *Server
	s = NewServer(plug, func(ctx context.Context, req *plugins.CallRequest) *plugins.CallResponse { return run(ctx, s, req) })
	if serverMax > 0 {
		s.SetMaxFrame(serverMax)
	}
	go s.Serve()
	c := NewClient(core, clientMax, cb)
	t.Cleanup(func() { c.Close(); s.Close() })
	return c, s
}

// rawClient is a Client whose plugin end the test speaks itself; both are
// closed when the test ends.
func rawClient(t testing.TB, cb plugins.Callbacks) (*Client, *os.File) {
	t.Helper()
	core, plug, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(core, 1<<20, cb)
	t.Cleanup(func() { c.Close(); plug.Close() })
	return c, plug
}

func echo(_ context.Context, _ *Server, req *plugins.CallRequest) *plugins.CallResponse {
	return &plugins.CallResponse{OK: true, Result: req.Args, Output: string(req.Context), Runtime: req.String(), DurationUs: req.TimeoutMs}
}

// Every field of a call and its answer crosses the channel.
func TestCallRoundTrip(t *testing.T) {
	c, _ := pair(t, nil, echo)
	tests := []struct {
		name string
		req  plugins.CallRequest
	}{
		{"plain", plugins.CallRequest{Callable: plugins.Callable{Module: "m", Func: "f"}, Args: json.RawMessage(`{"x":1}`), TimeoutMs: 5}},
		{"unicode and context", plugins.CallRequest{Callable: plugins.Callable{Module: "a", Func: "b"}, Args: json.RawMessage(`{"s":"é\u2028"}`),
			Context: json.RawMessage(`{"session_id":"s"}`), TimeoutMs: 1234}},
		{"empty args", plugins.CallRequest{Callable: plugins.Callable{Module: "m", Func: "g"}, Args: json.RawMessage(`{}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := c.Call(context.Background(), &tt.req)
			if err != nil {
				t.Fatal(err)
			}
			var want, got any
			json.Unmarshal(tt.req.Args, &want)
			json.Unmarshal(resp.Result, &got)
			if !resp.OK || !jsonEqual(want, got) || resp.Output != string(tt.req.Context) || resp.Runtime != tt.req.String() || resp.DurationUs != tt.req.TimeoutMs {
				t.Errorf("answer %+v for %+v", resp, tt.req)
			}
		})
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// Calls in flight are answered in whatever order they finish, each to its
// own caller.
func TestConcurrentCallsAnswerTheirCallers(t *testing.T) {
	c, _ := pair(t, nil, func(_ context.Context, _ *Server, req *plugins.CallRequest) *plugins.CallResponse {
		time.Sleep(time.Duration(req.TimeoutMs) * time.Millisecond)
		return &plugins.CallResponse{OK: true, Result: req.Args}
	})
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			args := json.RawMessage(strconv.Itoa(i))
			resp, err := c.Call(context.Background(), &plugins.CallRequest{Args: args, TimeoutMs: int64(40 - i)})
			if err != nil {
				errs <- err
			} else if string(resp.Result) != string(args) {
				errs <- errors.New("call " + string(args) + " got " + string(resp.Result))
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A caller that goes away returns at once, the plugin's call sees its
// context end, the late answer is dropped and the channel carries on.
func TestCancelReachesThePlugin(t *testing.T) {
	stopped := make(chan struct{})
	c, _ := pair(t, nil, func(ctx context.Context, _ *Server, req *plugins.CallRequest) *plugins.CallResponse {
		if req.Func == "nap" {
			<-ctx.Done()
			close(stopped)
			return &plugins.CallResponse{Error: &plugins.ToolError{Kind: plugins.ErrCancelled, Message: "stopped"}}
		}
		return &plugins.CallResponse{OK: true}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Call(ctx, &plugins.CallRequest{Callable: plugins.Callable{Func: "nap"}}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the context's", err)
	}
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the plugin's call was not cancelled")
	}
	if resp, err := c.Call(context.Background(), &plugins.CallRequest{}); err != nil || !resp.OK {
		t.Fatalf("after a cancel: %+v, %v", resp, err)
	}
}

type callbacks func(ctx context.Context, req *plugins.ToolCallRequest) (*plugins.ToolCallResponse, error)

func (f callbacks) CallTool(ctx context.Context, req *plugins.ToolCallRequest) (*plugins.ToolCallResponse, error) {
	return f(ctx, req)
}

// toolhost.call_tool goes from the plugin's call to the core's callbacks
// and back; when the plugin stops waiting, the core's side is cancelled.
func TestToolCallsComeBackToTheCore(t *testing.T) {
	cancelled := make(chan struct{})
	cb := callbacks(func(ctx context.Context, req *plugins.ToolCallRequest) (*plugins.ToolCallResponse, error) {
		switch req.Tool {
		case "slow":
			<-ctx.Done()
			close(cancelled)
			return nil, ctx.Err()
		case "fails":
			return nil, errors.New("no such tool")
		}
		return &plugins.ToolCallResponse{Answer: json.RawMessage(`{"tool":"` + req.Tool + `","token":"` + req.Token + `"}`)}, nil
	})
	c, _ := pair(t, cb, func(ctx context.Context, s *Server, req *plugins.CallRequest) *plugins.CallResponse {
		tctx := ctx
		if req.Func == "slow" {
			var cancel context.CancelFunc
			tctx, cancel = context.WithTimeout(ctx, 30*time.Millisecond)
			defer cancel()
		}
		r, err := s.CallTool(tctx, &plugins.ToolCallRequest{Tool: req.Func, Token: req.Token})
		if err != nil {
			return &plugins.CallResponse{Error: &plugins.ToolError{Kind: plugins.ErrRuntime, Message: err.Error()}}
		}
		return &plugins.CallResponse{OK: true, Result: r.Answer, Output: r.Error}
	})
	resp, err := c.Call(context.Background(), &plugins.CallRequest{Callable: plugins.Callable{Func: "other"}, Token: "tok"})
	if err != nil || string(resp.Result) != `{"tool":"other","token":"tok"}` {
		t.Fatalf("call_tool: %+v, %v", resp, err)
	}
	resp, err = c.Call(context.Background(), &plugins.CallRequest{Callable: plugins.Callable{Func: "fails"}})
	if err != nil || resp.Output != "no such tool" {
		t.Fatalf("a failing call_tool: %+v, %v", resp, err)
	}
	resp, err = c.Call(context.Background(), &plugins.CallRequest{Callable: plugins.Callable{Func: "slow"}})
	if err != nil || resp.Error == nil || !strings.Contains(resp.Error.Message, "deadline") {
		t.Fatalf("a call_tool past its deadline: %+v, %v", resp, err)
	}
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the core's side of the call_tool was not cancelled")
	}
}

// Without callbacks the plugin is told call_tool is not available.
func TestToolCallsWithoutCallbacks(t *testing.T) {
	c, _ := pair(t, nil, func(ctx context.Context, s *Server, _ *plugins.CallRequest) *plugins.CallResponse {
		r, err := s.CallTool(ctx, &plugins.ToolCallRequest{Tool: "x"})
		if err != nil {
			return &plugins.CallResponse{Output: err.Error()}
		}
		return &plugins.CallResponse{Output: r.Error}
	})
	resp, err := c.Call(context.Background(), &plugins.CallRequest{})
	if err != nil || resp.Output != "toolhost.call_tool is not available here" {
		t.Fatalf("%+v, %v", resp, err)
	}
}

// The core does not trust the plugin: a frame that breaks the protocol
// ends the channel, and every call waiting fails with ErrClosed.
func TestHostilePluginEndsTheChannel(t *testing.T) {
	tests := []struct {
		name  string
		frame func(id uint64) []byte // what the plugin writes instead of the answer
		want  string
	}{
		{"answer to a call never sent", func(id uint64) []byte {
			return marshal(message{ID: id + 100, Op: opAnswer, Answer: &plugins.CallResponse{}})
		}, "never sent"},
		{"answer without its answer", func(id uint64) []byte { return marshal(message{ID: id, Op: opAnswer}) }, "carries no answer"},
		{"unknown op", func(id uint64) []byte { return marshal(message{ID: id, Op: "shell"}) }, `unknown op "shell"`},
		{"malformed", func(uint64) []byte { return []byte(`{"id":`) }, "malformed frame"},
		{"call_tool without its request", func(id uint64) []byte { return marshal(message{ID: id, Op: opToolCall}) }, "without its request"},
		{"oversized", func(uint64) []byte { return make([]byte, 2<<20) }, "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, plug := rawClient(t, nil)
			go func() {
				body, err := frame.ReadRaw(plug)
				if err != nil {
					return
				}
				var m message
				json.Unmarshal(body, &m)
				frame.WriteRaw(plug, tt.frame(m.ID))
			}()
			_, err := c.Call(context.Background(), &plugins.CallRequest{})
			if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrClosed with %q", err, tt.want)
			}
			select {
			case <-c.Done():
			default:
				t.Fatal("the channel is still open")
			}
			if _, err := c.Call(context.Background(), &plugins.CallRequest{}); !errors.Is(err, ErrClosed) {
				t.Fatalf("a call after the channel ended: %v", err)
			}
		})
	}
}

func marshal(m message) []byte {
	b, _ := json.Marshal(m)
	return b
}

// A plugin process that dies fails the calls waiting on it.
func TestPluginDeathFailsWaitingCalls(t *testing.T) {
	started := make(chan struct{})
	c, s := pair(t, nil, func(ctx context.Context, _ *Server, _ *plugins.CallRequest) *plugins.CallResponse {
		close(started)
		<-ctx.Done()
		return &plugins.CallResponse{}
	})
	go func() {
		<-started
		s.Close()
	}()
	if _, err := c.Call(context.Background(), &plugins.CallRequest{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
}

// The inherited end is found by its variable, which is removed, and is
// close-on-exec (no worker or tool code inherits it) and non-blocking.
func TestInherited(t *testing.T) {
	core, plug, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	defer core.Close()
	fd, err := unix.Dup(int(plug.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	plug.Close()
	t.Setenv(plugins.EnvDataFD, strconv.Itoa(fd))
	f := Inherited()
	if f == nil {
		t.Fatal("no channel inherited")
	}
	defer f.Close()
	if _, ok := os.LookupEnv(plugins.EnvDataFD); ok {
		t.Error("the variable is still set")
	}
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	if err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("descriptor flags %#x, %v: want close-on-exec", flags, err)
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil || fl&syscall.O_NONBLOCK == 0 {
		t.Errorf("file flags %#x, %v: want non-blocking", fl, err)
	}
	for _, v := range []string{"", "x", "1", "-4"} {
		t.Setenv(plugins.EnvDataFD, v)
		if f := Inherited(); f != nil {
			t.Errorf("%q gave a channel", v)
		}
	}
}

// BenchmarkRoundTrip is one call over the channel to a runtime that answers
// at once, both ends in this process.
func BenchmarkRoundTrip(b *testing.B) {
	c, _ := pair(b, nil, echo)
	req := &plugins.CallRequest{Callable: plugins.Callable{Module: "m", Func: "f"}, Args: json.RawMessage(`{"x":1}`)}
	for b.Loop() {
		if _, err := c.Call(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}
