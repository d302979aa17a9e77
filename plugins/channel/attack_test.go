package channel

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"toolhost/plugins"
	"toolhost/plugins/frame"
)

// Red-team attacks on the data channel by tool code and by a plugin
// process that stops reading it.

// limitedPair is pair with the core's bound of a group of the given limits
// (what core/runner gives its Client).
func limitedPair(t testing.TB, limits plugins.Limits, cb plugins.Callbacks, run func(context.Context, *Server, *plugins.CallRequest) *plugins.CallResponse) (*Client, *Server) {
	return boundPair(t, limits.AnswerBytes(), limits.AnswerBytes(), cb, run)
}

// jsonString is a JSON string of n bytes (quotes included) of repeated r,
// as runner.py writes it (ensure_ascii=False: nothing but " and \ and
// control characters escaped).
func jsonString(r string, n int) json.RawMessage {
	return json.RawMessage(`"` + strings.Repeat(r, (n-2)/len(r)) + `"`)
}

// An answer that passed the worker's bounds (plugins/worker.Bound: a
// result of at most ResultBytes of JSON, output and error texts at their
// limits) reaches its caller whatever its characters, and the channel
// carries on: tool code that returns HTML (<, > and &, which Go's encoder
// would write as \u003c, six bytes each) or text with U+2028 must not end
// the channel, and with it every other call of the group in flight.
func TestAnswerAtItsLimitsCrossesTheChannel(t *testing.T) {
	limits := plugins.Limits{}.WithDefaults()
	tests := []struct {
		name string
		resp plugins.CallResponse
	}{
		{"a result of < at the result limit", plugins.CallResponse{OK: true, Result: jsonString("<", limits.ResultBytes)}},
		{"a result of &> at the result limit", plugins.CallResponse{OK: true, Result: jsonString("&>", limits.ResultBytes)}},
		{"a result of U+2028 at the result limit", plugins.CallResponse{OK: true, Result: jsonString("\u2028", limits.ResultBytes)}},
		{"output of control characters and < at its limit, with a result", plugins.CallResponse{OK: true, Result: jsonString("<", limits.ResultBytes),
			Output: strings.Repeat("\x01<", limits.OutputBytes/2)}},
		// Past the bound (a plugin's runtime that bounds less, gpython's
		// output say): a result error, and the channel stays.
		{"an answer past the core's bound", plugins.CallResponse{OK: true, Result: jsonString("a", 2*limits.AnswerBytes()), Runtime: "r"}},
		{"an exception's texts of < at their limits", plugins.CallResponse{Error: &plugins.ToolError{Kind: plugins.ErrException, Type: strings.Repeat("<", 256),
			Message: strings.Repeat("<", plugins.ErrorTextBytes), Traceback: strings.Repeat("\x02", plugins.ErrorTextBytes)}, Output: strings.Repeat(">", limits.OutputBytes)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := limitedPair(t, limits, nil, func(context.Context, *Server, *plugins.CallRequest) *plugins.CallResponse {
				r := tt.resp
				return &r
			})
			resp, err := c.Call(context.Background(), &plugins.CallRequest{})
			if err != nil {
				t.Fatalf("THE CHANNEL ENDED: %v", err)
			}
			if len(tt.resp.Result) > limits.AnswerBytes() {
				if resp.OK || resp.Error == nil || resp.Error.Kind != plugins.ErrResult || !strings.Contains(resp.Error.Message, "larger than the limit") || resp.Runtime != "r" {
					t.Fatalf("an answer past the bound: %+v %+v", resp, resp.Error)
				}
			} else if string(resp.Result) != string(tt.resp.Result) || resp.Output != tt.resp.Output || (resp.Error == nil) != (tt.resp.Error == nil) {
				t.Fatalf("the answer changed on the way")
			}
			if _, err := c.Call(context.Background(), &plugins.CallRequest{}); err != nil {
				t.Fatalf("the next call: %v", err)
			}
		})
	}
}

// A toolhost.call_tool request whose arguments fit the worker's frame
// (what plugins/worker.Exchange accepts from tool code) reaches the core
// as it was, whatever its characters; a request too large to cross is
// refused to the tool that made it, and the channel carries on. Tool code
// chooses every byte of these.
func TestToolCallOfHostileSizeIsContained(t *testing.T) {
	limits := plugins.Limits{}.WithDefaults()
	// What a worker's call_tool frame leaves for the arguments.
	room := limits.AnswerBytes() - 256
	tests := []struct {
		name string
		req  plugins.ToolCallRequest
		// refused: the request cannot cross; the tool gets an error, the
		// channel stays.
		refused bool
	}{
		{name: "arguments of < that fit the worker's frame", req: plugins.ToolCallRequest{Tool: "t", Args: json.RawMessage(`{"a":` + string(jsonString("<", room/2)) + `}`)}},
		{name: "arguments of U+2028", req: plugins.ToolCallRequest{Tool: "t", Args: json.RawMessage(`{"a":` + string(jsonString("\u2028", room/2)) + `}`)}},
		{name: "arguments filling the worker's frame", req: plugins.ToolCallRequest{Tool: "t", Args: json.RawMessage(`{"a":` + string(jsonString("a", room)) + `}`)}},
		// gpython's toolhost.call_tool bounds nothing; a worker's frame of
		// invalid UTF-8 (U+FFFD once decoded, three times its size) or
		// escaped control characters in the tool's name grows on the way.
		{name: "arguments past every frame (gpython)", req: plugins.ToolCallRequest{Tool: "t", Args: json.RawMessage(`{"a":` + string(jsonString("a", 2*limits.AnswerBytes())) + `}`)}, refused: true},
		{name: "a tool name of U+FFFD from a worker's frame of invalid UTF-8", req: plugins.ToolCallRequest{Tool: strings.Repeat("\ufffd", room), Args: json.RawMessage(`{}`)}, refused: true},
		{name: "a group of control characters", req: plugins.ToolCallRequest{Tool: "t", Group: strings.Repeat("\x01", limits.AnswerBytes()/6+1), Args: json.RawMessage(`{}`)}, refused: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := make(chan *plugins.ToolCallRequest, 1)
			cb := callbacks(func(_ context.Context, req *plugins.ToolCallRequest) (*plugins.ToolCallResponse, error) {
				got <- req
				return &plugins.ToolCallResponse{Answer: json.RawMessage(`"ok"`)}, nil
			})
			c, _ := limitedPair(t, limits, cb, func(ctx context.Context, s *Server, _ *plugins.CallRequest) *plugins.CallResponse {
				r, err := s.CallTool(ctx, &tt.req)
				if err != nil {
					return &plugins.CallResponse{Error: &plugins.ToolError{Kind: plugins.ErrRuntime, Message: err.Error()}}
				}
				return &plugins.CallResponse{OK: r.Error == "", Result: r.Answer, Output: r.Error}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			resp, err := c.Call(ctx, &plugins.CallRequest{})
			if err != nil {
				t.Fatalf("THE CHANNEL ENDED: %v", err)
			}
			if tt.refused {
				if resp.OK || resp.Error == nil || !strings.Contains(resp.Error.Message, "larger than") {
					t.Fatalf("an oversized call_tool: %+v", resp)
				}
			} else {
				if !resp.OK {
					t.Fatalf("call_tool: %+v %+v", resp, resp.Error)
				}
				r := <-got
				if string(r.Args) != string(tt.req.Args) || r.Tool != tt.req.Tool {
					t.Fatal("the request changed on the way")
				}
			}
			if _, err := c.Call(context.Background(), &plugins.CallRequest{}); err != nil {
				t.Fatalf("the next call: %v", err)
			}
		})
	}
}

// A plugin process that stops reading its channel (tool code may SIGSTOP
// it: it runs as the same user) must not keep a caller past its context:
// neither a call whose frame does not fit in the socket's buffer, nor a
// call whose deadline comes while another's frame is stuck (its cancel
// waits for the same lock), nor a call started after them. The core
// replaces such a process only once one of its calls has returned.
func TestPluginThatStopsReadingDoesNotHoldCallers(t *testing.T) {
	// The plugin reads nothing until the end of the test.
	c, _ := rawClient(t, nil)
	big := &plugins.CallRequest{Args: json.RawMessage(`"` + strings.Repeat("a", 8<<20) + `"`)}
	small := &plugins.CallRequest{Args: json.RawMessage(`{}`)}
	type result struct {
		name string
		err  error
		took time.Duration
	}
	results := make(chan result, 3)
	run := func(name string, req *plugins.CallRequest, timeout time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		start := time.Now()
		_, err := c.Call(ctx, req)
		results <- result{name, err, time.Since(start)}
	}
	go run("a call whose frame does not fit", big, 300*time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	go run("a small call beside it", small, 300*time.Millisecond)
	go run("a small call with a longer deadline", small, 600*time.Millisecond)
	for range 3 {
		select {
		case r := <-results:
			if !errors.Is(r.err, context.DeadlineExceeded) && !errors.Is(r.err, ErrClosed) {
				t.Errorf("%s: %v", r.name, r.err)
			}
			if r.took > 2*time.Second {
				t.Errorf("%s returned after %s", r.name, r.took)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("A CALLER IS HELD past its context by a plugin that does not read its channel")
		}
	}
}

// A plugin that sends call_tool requests without end (a flood, each one
// refused by the core's callbacks) does not leave the core with one
// goroutine or record per request: every record is gone once answered.
func TestToolCallFloodLeavesNothing(t *testing.T) {
	cb := callbacks(func(context.Context, *plugins.ToolCallRequest) (*plugins.ToolCallResponse, error) {
		return &plugins.ToolCallResponse{Error: "refused"}, nil
	})
	c, plug := rawClient(t, cb)
	// As many as may be in flight at once (more end the channel:
	// TestToolCallAbuseEndsTheChannel).
	const n = maxToolCalls
	go func() {
		for i := range n {
			frame.WriteRaw(plug, marshal(message{ID: uint64(i), Op: opToolCall, ToolCall: &plugins.ToolCallRequest{Tool: "x"}}))
		}
	}()
	answers := 0
	deadline := time.Now().Add(10 * time.Second)
	plug.SetReadDeadline(deadline)
	for answers < n {
		body, err := frame.ReadRaw(plug)
		if err != nil {
			t.Fatalf("after %d answers: %v", answers, err)
		}
		var m message
		if json.Unmarshal(body, &m) != nil || m.Op != opToolAnswer {
			t.Fatalf("frame %s", body)
		}
		answers++
	}
	for time.Now().Before(deadline) {
		c.mu.Lock()
		left := len(c.tools)
		c.mu.Unlock()
		if left == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("call_tool records are left after the flood was answered")
}

// A plugin that sends a call_tool request again while it is being served,
// or more requests than may be in flight, breaks the protocol: the channel
// ends (and the core replaces the process), and every request it was
// serving is cancelled.
func TestToolCallAbuseEndsTheChannel(t *testing.T) {
	tests := []struct {
		name string
		ids  func(i int) uint64
		n    int
		want string
	}{
		{"an id sent again while served", func(int) uint64 { return 7 }, 2, "again while it was being served"},
		{"more requests than may be in flight", func(i int) uint64 { return uint64(i + 1) }, maxToolCalls + 1, "requests in flight"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			release := make(chan struct{})
			var cancelled atomic.Int32
			cb := callbacks(func(ctx context.Context, _ *plugins.ToolCallRequest) (*plugins.ToolCallResponse, error) {
				select {
				case <-ctx.Done():
					cancelled.Add(1)
				case <-release:
				}
				return &plugins.ToolCallResponse{Error: "refused"}, nil
			})
			c, plug := rawClient(t, cb)
			defer close(release)
			go func() {
				for i := range tt.n {
					frame.WriteRaw(plug, marshal(message{ID: tt.ids(i), Op: opToolCall, ToolCall: &plugins.ToolCallRequest{Tool: "x"}}))
				}
			}()
			select {
			case <-c.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the channel is still open")
			}
			if c.err == nil || !strings.Contains(c.err.Error(), tt.want) {
				t.Errorf("the channel ended with %v, want %q", c.err, tt.want)
			}
			deadline := time.Now().Add(5 * time.Second)
			for cancelled.Load() < 1 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if cancelled.Load() < 1 {
				t.Error("the requests being served were not cancelled")
			}
		})
	}
}
