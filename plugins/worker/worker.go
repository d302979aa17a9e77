// Package worker is the protocol between a host and one python worker
// (pyhost/cpython's runner.py): framed JSON (package frame) over two
// pipes, the worker's descriptor 3 for requests and 4 for answers, never
// stdout. Its host is the plugin process, which starts the workers, or
// the core itself on the direct path (core/runner), which borrows a
// worker's pipes from the plugin process and calls it without a hop
// through that process.
//
// The host does not trust the worker: every request carries a fresh
// random id that its answer must repeat, a frame larger than the caller's
// bound, a frame for no request in flight, or bytes left after the answer
// stop the worker, and the answer's texts are cut at their limits.
package worker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"toolhost/plugins"
	"toolhost/plugins/frame"
)

// Errors of an exchange; the worker has been stopped after each.
var (
	// ErrTimeout is a worker that did not answer before the deadline.
	ErrTimeout = errors.New("timeout")
	// ErrCancelled is a call whose caller went away.
	ErrCancelled = errors.New("cancelled")
	// ErrForeign is a frame that does not belong to the exchange in
	// flight: a wrong or missing request id, an unknown op, or bytes
	// written after the answer.
	ErrForeign = errors.New("the worker sent an answer that does not belong to this call")
)

// Answer is any frame a worker writes on its answer pipe, decoded once: a
// call's answer, a toolhost.call_tool request (op "call_tool"), the ready
// frame or a describe answer. Every one carries the id of the request in
// flight.
type Answer struct {
	ID string `json:"id"`
	Op string `json:"op"`

	// A call's answer.
	OK              bool               `json:"ok"`
	Result          json.RawMessage    `json:"result"`
	Error           *plugins.ToolError `json:"error"`
	Output          string             `json:"output"`
	OutputTruncated bool               `json:"output_truncated"`
	DurationUs      int64              `json:"duration_us"`

	// A toolhost.call_tool request. Whatever else the worker puts in it
	// (a context, a depth, a session) is not even decoded.
	Tool           string          `json:"tool"`
	Args           json.RawMessage `json:"args"`
	IdempotencyKey string          `json:"idempotency_key"`
	Group          string          `json:"group"`

	// The ready frame and a describe answer.
	Ready      bool                `json:"ready"`
	Signatures []plugins.Signature `json:"signatures"`
}

// Request is a frame to a worker; Exchange stamps it with a fresh id.
type Request interface{ SetID(id string) }

// Call is the request that runs one callable.
type Call struct {
	ID      string          `json:"id"`
	Op      string          `json:"op"`
	Module  string          `json:"module"`
	Func    string          `json:"func"`
	Args    json.RawMessage `json:"args"`
	Context json.RawMessage `json:"context,omitempty"`
	// Convert is plugins.CallRequest.Convert.
	Convert map[string]json.RawMessage `json:"convert,omitempty"`
}

// SetID implements Request.
func (f *Call) SetID(id string) { f.ID = id }

// CallOf is the request of a plugins.CallRequest.
func CallOf(req *plugins.CallRequest) *Call {
	return &Call{Op: "call", Module: req.Module, Func: req.Func, Args: req.Args, Context: req.Context, Convert: req.Convert}
}

// newID is a fresh request id: random, so that tool code cannot write an
// answer ahead for a call yet to come.
func newID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Conn is a host's end of one worker's pipes.
type Conn struct {
	// Req is the host's end of the worker's descriptor 3.
	Req *os.File
	// Resp is the host's end of the worker's descriptor 4, in blocking
	// mode: the reading thread is woken directly when the worker writes.
	Resp *os.File
	// Stop kills the worker, so that a read blocked on Resp returns. It is
	// called from a timer at the deadline, when the caller goes away, and
	// after any failed exchange; it may be called more than once.
	Stop func()
	// Checked is set by a caller that has just seen Pending report
	// nothing, before the next Exchange: that Exchange does not ask again
	// (a system call) and clears it.
	Checked bool
	// AfterChecked is set by a caller that asks the answer pipe itself
	// after every exchange that answered, before it takes the answer and
	// before the worker serves anything else (the core's direct path
	// polls it with the workers' pidfds): Exchange does not ask it after
	// the answer, and the caller fails the exchange with ErrForeign when
	// bytes wait there.
	AfterChecked bool

	// timer is the Conn's one deadline timer, made at its first exchange
	// and reset for each: a Conn kept for the worker's life (the core's
	// direct path) makes no timer per call. It stops the exchange in
	// flight (inFlight) once that exchange's deadline has passed.
	timer    *time.Timer
	inFlight atomic.Pointer[exchange]
}

// exchange is the state of one Exchange that its deadline's timer and its
// caller's going away may stop.
type exchange struct {
	c        *Conn
	deadline time.Time

	mu                        sync.Mutex
	ended, timedOut, canceled bool
}

// stop stops the worker, as on a timeout or a caller gone, unless the
// exchange has ended: either may fire just as it ends, and the worker
// may then already serve the next call.
func (e *exchange) stop(timeout bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended {
		return
	}
	if timeout {
		e.timedOut = true
	} else if !e.timedOut {
		e.canceled = true
	}
	e.c.Stop()
}

// expire is the Conn timer's function: it stops the exchange in flight
// when that exchange's deadline has passed. A timer that fires for an
// exchange that has ended meets the next one's later deadline, and does
// nothing (Reset has scheduled it again for that one).
func (c *Conn) expire() {
	if e := c.inFlight.Load(); e != nil && !time.Now().Before(e.deadline) {
		e.stop(true)
	}
}

// Pending reports whether the worker has written bytes that no one has
// read yet on its answer pipe (or the pipe cannot be asked).
func (c *Conn) Pending() bool {
	// Through SyscallConn, not Fd: Fd would put a pollable pipe back in
	// blocking mode.
	rc, err := c.Resp.SyscallConn()
	if err != nil {
		return true
	}
	n := 0
	cerr := rc.Control(func(fd uintptr) { n, err = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }) // FIONREAD
	return cerr != nil || err != nil || n > 0
}

// Exchange writes one request and reads frames until its answer comes
// before the deadline, serving toolhost.call_tool requests on the way
// (answered on the request pipe) with cb and the call's token. A frame
// larger than maxFrame, a frame without the request's id, or any byte left
// on the pipe after the answer stops the worker; so does any other
// failure: a worker is never reused after an incomplete exchange.
func (c *Conn) Exchange(ctx context.Context, req Request, maxFrame int, deadline time.Time, cb plugins.Callbacks, token string) (*Answer, error) {
	id := newID()
	req.SetID(id)
	// The deadline's timer and a caller that goes away stop the worker
	// (as on a timeout, and nothing else), but only while the exchange is
	// in flight. An exchange that they stopped fails, answer or not: its
	// worker is gone.
	e := &exchange{c: c, deadline: deadline}
	c.inFlight.Store(e)
	if c.timer == nil {
		c.timer = time.AfterFunc(time.Until(deadline), c.expire)
	} else {
		c.timer.Reset(time.Until(deadline))
	}
	var stopWatch func() bool
	if ctx.Done() != nil {
		stopWatch = context.AfterFunc(ctx, func() { e.stop(errors.Is(ctx.Err(), context.DeadlineExceeded)) })
	}
	// end ends the exchange and says whether the timer or the caller
	// stopped it.
	end := func() (timeout, cancel bool) {
		c.timer.Stop()
		c.inFlight.CompareAndSwap(e, nil)
		if stopWatch != nil {
			stopWatch()
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		e.ended = true
		return e.timedOut, e.canceled
	}
	fail := func(err error) (*Answer, error) {
		timeout, cancel := end()
		c.Stop()
		if cancel {
			return nil, ErrCancelled
		}
		if timeout || errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, ErrTimeout
		}
		return nil, err
	}
	// Bytes already waiting were written when no request was in flight.
	checked := c.Checked
	c.Checked = false
	if !checked && c.Pending() {
		return fail(ErrForeign)
	}
	c.Req.SetWriteDeadline(deadline)
	if err := frame.Write(c.Req, req); err != nil {
		return fail(err)
	}
	for {
		body, err := readFrame(c.Resp, maxFrame)
		if err != nil {
			return fail(err)
		}
		var a Answer
		if err := decodeAnswer(body, &a); err != nil {
			return fail(fmt.Errorf("malformed frame: %w", err))
		}
		if a.ID != id {
			return fail(ErrForeign)
		}
		switch a.Op {
		case "":
			if !c.AfterChecked && c.Pending() {
				return fail(ErrForeign)
			}
			if timeout, cancel := end(); timeout || cancel {
				return fail(nil)
			}
			return &a, nil
		case "call_tool":
		default:
			return fail(ErrForeign)
		}
		answer := &plugins.ToolCallResponse{Error: "toolhost.call_tool is not available here"}
		// The arguments as compact JSON, whatever spacing the worker wrote
		// (and checked to be JSON).
		var args bytes.Buffer
		if err := json.Compact(&args, a.Args); err != nil {
			answer = &plugins.ToolCallResponse{Error: "the arguments of toolhost.call_tool are not JSON: " + err.Error()}
		} else if cb != nil && token != "" {
			a.Args = args.Bytes()
			cctx, cancel := context.WithDeadline(ctx, deadline)
			r, err := cb.CallTool(cctx, &plugins.ToolCallRequest{Tool: a.Tool, Args: a.Args,
				IdempotencyKey: a.IdempotencyKey, Group: a.Group, Token: token})
			cancel()
			if err != nil {
				answer = &plugins.ToolCallResponse{Error: err.Error()}
			} else {
				answer = r
			}
		}
		if err := frame.Write(c.Req, answer); err != nil {
			return fail(err)
		}
	}
}

// firstRead is how much of a frame readFrame reads at once: a call's
// answer usually fits, so that its length and body come in one read(2).
const firstRead = 4096

// readBuffers are readFrame's first reads.
var readBuffers = sync.Pool{New: func() any { return new([firstRead]byte) }}

// readFrame reads one frame from the worker's answer pipe, as
// frame.ReadRawLimit does, but in one read(2) when the frame fits in
// firstRead bytes. Bytes read past the frame are ErrForeign: the worker
// writes one frame, then waits for the host (a call's next request, or
// the answer to its toolhost.call_tool), so anything after it was written
// out of turn.
func readFrame(r io.Reader, limit int) ([]byte, error) {
	if limit <= 0 || limit > frame.MaxSize {
		limit = frame.MaxSize
	}
	buf := readBuffers.Get().(*[firstRead]byte)
	defer readBuffers.Put(buf)
	n, err := io.ReadAtLeast(r, buf[:], 4)
	if err != nil {
		return nil, err
	}
	size := int(binary.BigEndian.Uint32(buf[:4]))
	if size > limit {
		return nil, &frame.TooLargeError{Size: int64(size), Limit: int64(limit)}
	}
	if n > 4+size {
		return nil, ErrForeign
	}
	body := make([]byte, size)
	copy(body, buf[4:n])
	if _, err := io.ReadFull(r, body[n-4:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return body, nil
}

// Deadline is d from now, or ctx's deadline when that comes first.
func Deadline(ctx context.Context, d time.Duration) time.Time {
	dl := time.Now().Add(d)
	if c, ok := ctx.Deadline(); ok && c.Before(dl) {
		return c
	}
	return dl
}

// Failure is the error of an exchange that failed by the protocol (its
// deadline, its caller gone, a foreign or oversized frame), during names
// the exchange; nil for any other error (the worker died: only its host
// can say how).
func Failure(during string, err error) *plugins.ToolError {
	var tl *frame.TooLargeError
	switch {
	case errors.Is(err, ErrTimeout):
		return &plugins.ToolError{Kind: plugins.ErrTimeout, Message: "the worker did not answer in time during " + during + "; it was killed"}
	case errors.Is(err, ErrCancelled):
		return &plugins.ToolError{Kind: plugins.ErrCancelled, Message: "the caller went away during " + during + "; its worker was stopped"}
	case errors.Is(err, ErrForeign):
		return &plugins.ToolError{Kind: plugins.ErrCrash, Message: fmt.Sprintf("the worker sent an answer that does not belong to %s; it was replaced", during)}
	case errors.As(err, &tl):
		return &plugins.ToolError{Kind: plugins.ErrResult, Message: fmt.Sprintf(
			"the answer of %s is %d bytes, more than the limit of %d (the result limit and the printed output); its worker was replaced", during, tl.Size, tl.Limit)}
	}
	return nil
}

// Bound enforces the result and output limits on an answer, whatever the
// worker's runner.py claims: printed output and an exception's text are
// cut at their limits; a result past ResultBytes is a result error (and
// the caller must replace the worker, which runner.py would never let send
// it).
func Bound(a *Answer, limits plugins.Limits) *plugins.ToolError {
	if len(a.Output) > limits.OutputBytes {
		a.Output, a.OutputTruncated = Cut(a.Output, limits.OutputBytes), true
	}
	if a.Error != nil {
		a.Error.Message = Cut(a.Error.Message, plugins.ErrorTextBytes)
		a.Error.Traceback = Cut(a.Error.Traceback, plugins.ErrorTextBytes)
		a.Error.Type = Cut(a.Error.Type, 256)
		a.Error.Body = Cut(a.Error.Body, plugins.ErrorTextBytes)
		if a.Error.Status < 100 || a.Error.Status > 599 {
			a.Error.Status = 0
		}
	}
	if a.OK && len(a.Result) > limits.ResultBytes {
		return &plugins.ToolError{Kind: plugins.ErrResult, Type: "OverflowError", Message: fmt.Sprintf(
			"the result is %d bytes of JSON, more than the limit of %d; its worker was replaced", len(a.Result), limits.ResultBytes)}
	}
	return nil
}

// Cut keeps the first n bytes of s, ending on a whole UTF-8 character.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Respond fills a call's response from its answer: the printed output,
// then the result or the error (tooLarge, from Bound, wins).
func Respond(resp *plugins.CallResponse, a *Answer, tooLarge *plugins.ToolError) {
	resp.Output, resp.OutputTruncated = a.Output, a.OutputTruncated
	if tooLarge != nil {
		resp.Error = tooLarge
		return
	}
	resp.OK = a.OK
	resp.Error = a.Error
	if a.OK {
		resp.Result = a.Result
	} else if resp.Error == nil {
		resp.Error = &plugins.ToolError{Kind: plugins.ErrCrash, Message: "the worker answered a failure without an error"}
	}
}
