// Package channel is the data path between the core and its plugin
// process: one stream socket of a socketpair, inherited by the plugin
// process (never a path in a file system, so nothing else can connect to
// it), carrying framed JSON (package frame) multiplexed by request id. A
// call is one frame each way; go-plugin's gRPC keeps the lifecycle (load,
// describe, shutdown) and is not on the way of a call.
//
// The core's end is a Client: it sends calls and cancellations and serves
// the toolhost.call_tool requests that tool code makes during a call. The
// plugin's end is a Server: it runs each call on its runtime and answers.
//
// Both ends read through Go's poller, never with a read(2) that blocks
// its thread: a reader blocked in the kernel keeps its processor, and the
// goroutine it has just woken (the caller of the answer it delivered)
// would wait for the runtime to take the processor back, some 20 µs to
// 10 ms (measured: ~100 µs a round trip so, against ~10 µs).
package channel

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"toolhost/plugins"
	"toolhost/plugins/frame"
)

// Ops of a frame.
const (
	opCall       = "call"        // core → plugin: run Call
	opCancel     = "cancel"      // core → plugin: the caller of call ID went away
	opAnswer     = "answer"      // plugin → core: Answer of call ID
	opToolCall   = "call_tool"   // plugin → core: toolhost.call_tool ToolCall
	opToolAnswer = "tool_answer" // core → plugin: ToolAnswer of call_tool ID
	opToolCancel = "cancel_tool" // plugin → core: the call that asked call_tool ID stopped waiting
)

// message is one frame of the channel. ID is the call's (opCall, opCancel,
// opAnswer) or the toolhost.call_tool request's (opToolCall, opToolAnswer);
// each side numbers its own requests.
type message struct {
	ID         uint64                    `json:"id"`
	Op         string                    `json:"op"`
	Call       *plugins.CallRequest      `json:"call,omitempty"`
	Answer     *plugins.CallResponse     `json:"answer,omitempty"`
	ToolCall   *plugins.ToolCallRequest  `json:"tool_call,omitempty"`
	ToolAnswer *plugins.ToolCallResponse `json:"tool_answer,omitempty"`
	// Lending a worker to the core (lend.go).
	Loan *Loan `json:"loan,omitempty"`
	// Callable names the call a worker served, for the notes of a check.
	Callable string `json:"callable,omitempty"`
	// files are the descriptors that came with the frame (a fresh loan).
	files []*os.File
}

// Pair makes a channel: the core's end and the plugin's end, both
// non-blocking (read through Go's poller) and close-on-exec (the plugin's
// end is passed to the plugin process as one of its ExtraFiles, which
// clears the flag in the child only).
func Pair() (core, plugin *os.File, err error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC|syscall.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("make the plugin's data channel: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "data-channel"), os.NewFile(uintptr(fds[1]), "data-channel-plugin"), nil
}

// Inherited returns the plugin's end of the channel named by plugins.EnvDataFD in this
// process's environment (nil when there is none), removes the variable,
// and marks the descriptor close-on-exec, so that no process this one
// starts (a worker, and the tool code it runs) inherits it.
func Inherited() *os.File {
	fd, ok := plugins.InheritedDataFD()
	if !ok {
		return nil
	}
	// Non-blocking, through Go's poller: the plugin process may run on one
	// thread (GOMAXPROCS=1), and a reader blocked in a plain read(2) would
	// keep the calls it starts from running until the runtime takes its
	// thread back.
	syscall.SetNonblock(fd, true)
	return os.NewFile(uintptr(fd), "data-channel")
}

// conn is what both ends share: frames written whole under a lock, read by
// one goroutine.
type conn struct {
	f  *os.File
	wm sync.Mutex
	// done is closed once the reader has stopped; err says why.
	done chan struct{}
	err  error
}

func (c *conn) send(m *message) error {
	body, err := encode(m)
	if err != nil {
		return err
	}
	return c.sendRaw(body)
}

// sendRaw writes one frame of body, whole, in one write.
func (c *conn) sendRaw(body []byte) error {
	b, err := withHeader(body)
	if err != nil {
		return err
	}
	c.wm.Lock()
	defer c.wm.Unlock()
	if _, err = c.f.Write(b); err != nil {
		return &writeError{err}
	}
	return nil
}

// writeError is a frame the channel's socket did not take (the plugin's
// end is closed, or the channel was).
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

// encode is m's frame body. Nothing is escaped for HTML: json.Marshal
// writes <, > and & as \u003c (six bytes), in a json.RawMessage too, and a
// result within its bound (plugins/worker.Bound: ResultBytes of JSON as
// runner.py wrote it) would grow past the core's bound on the way
// (plugins.Limits.AnswerBytes), and end the channel with every call of
// the group in flight.
func encode(m *message) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// withHeader is body as one whole frame: its length, then body.
func withHeader(body []byte) ([]byte, error) {
	if len(body) > frame.MaxSize {
		return nil, fmt.Errorf("frame of %d bytes is larger than %d", len(body), frame.MaxSize)
	}
	b := make([]byte, 4+len(body))
	binary.BigEndian.PutUint32(b, uint32(len(body)))
	copy(b[4:], body)
	return b, nil
}

// marshalFrame is m as one whole frame: its length, then its JSON.
func marshalFrame(m *message) ([]byte, error) {
	body, err := encode(m)
	if err != nil {
		return nil, err
	}
	return withHeader(body)
}

// shut ends the connection: the reader's blocked read returns (a plain
// Close would wait for it), then the descriptor is closed.
func (c *conn) shut() {
	if sc, err := c.f.SyscallConn(); err == nil {
		sc.Control(func(fd uintptr) { syscall.Shutdown(int(fd), syscall.SHUT_RDWR) })
	}
	<-c.done
	c.f.Close()
}

// maxToolCalls bounds the toolhost.call_tool requests a plugin process may
// have in flight at once: a worker makes one at a time, and a group runs
// a handful of calls at once; more is a plugin that broke the protocol
// (each one is a goroutine of the core's).
const maxToolCalls = 1024

// ErrClosed is a call that could not be answered because the channel
// ended: the plugin process died or broke the protocol.
var ErrClosed = errors.New("the plugin's data channel closed")

// ErrNotSent wraps ErrClosed for a request the channel ended before
// sending (or whose frame could not be written): the plugin never had it,
// so nothing of it ran, and it may be sent again elsewhere.
var ErrNotSent = fmt.Errorf("%w before the request was sent", ErrClosed)

// Client is the core's end of a channel.
type Client struct {
	conn
	maxFrame  int
	callbacks plugins.Callbacks

	mu      sync.Mutex
	next    uint64
	pending map[uint64]chan *message
	// tools are the toolhost.call_tool requests being served, by the
	// plugin's id.
	tools map[uint64]context.CancelFunc
}

// NewClient starts the core's end on f. Answers larger than maxFrame bytes
// end the channel (the plugin bounds them first). callbacks, if set,
// serve toolhost.call_tool; without them the plugin is told the function
// is not available.
func NewClient(f *os.File, maxFrame int, callbacks plugins.Callbacks) *Client {
	c := &Client{conn: conn{f: f, done: make(chan struct{})}, maxFrame: maxFrame, callbacks: callbacks,
		pending: map[uint64]chan *message{}, tools: map[uint64]context.CancelFunc{}}
	go c.read()
	return c
}

// SetCallbacks sets what serves toolhost.call_tool from now on (a spare
// process is started before the group it will serve is known).
func (c *Client) SetCallbacks(cb plugins.Callbacks) {
	c.mu.Lock()
	c.callbacks = cb
	c.mu.Unlock()
}

// Call sends one call and waits for its answer. When ctx ends first, the
// plugin is told to stop the call and ctx's error is returned at once;
// when the channel ends first, an error wrapping ErrClosed is.
func (c *Client) Call(ctx context.Context, req *plugins.CallRequest) (*plugins.CallResponse, error) {
	m, err := c.request(ctx, &message{Op: opCall, Call: req})
	if err != nil {
		return nil, err
	}
	return m.Answer, nil
}

// request sends m with a fresh id and waits for the frame that answers it
// (an opAnswer or an opLoan). When ctx ends first, an opCall is cancelled
// in the plugin.
func (c *Client) request(ctx context.Context, m *message) (*message, error) {
	ch := make(chan *message, 1)
	c.mu.Lock()
	if c.pending == nil {
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: %v", ErrNotSent, c.closedErr())
	}
	c.next++
	id := c.next
	c.pending[id] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		if c.pending != nil {
			delete(c.pending, id)
		}
		c.mu.Unlock()
	}
	m.ID = id
	// The frame is written on a goroutine of its own: a plugin process
	// that does not read its channel (stopped by tool code, which runs as
	// its user, or wedged) fills the socket's buffer, and a write blocks
	// until it reads. The caller must still return when ctx ends (the
	// core replaces the process then), and so must a caller waiting to
	// write its cancel behind that frame. A frame is never left half
	// written while the channel lives; its cancel follows it.
	sent := make(chan error, 1)
	go func() { sent <- c.send(m) }()
	cancelled := func() (*message, error) {
		forget()
		go func() {
			if <-sent == nil && m.Op == opCall {
				c.send(&message{ID: id, Op: opCancel})
			}
		}()
		return nil, ctx.Err()
	}
	select {
	case err := <-sent:
		if err != nil {
			forget()
			var we *writeError
			if errors.As(err, &we) {
				return nil, fmt.Errorf("%w: %v", ErrNotSent, err)
			}
			return nil, fmt.Errorf("%w: %v", ErrClosed, err)
		}
		sent <- nil // for cancelled
	case <-ctx.Done():
		return cancelled()
	}
	select {
	case resp, ok := <-ch:
		if !ok {
			return nil, c.closedErr()
		}
		return resp, nil
	case <-ctx.Done():
		return cancelled()
	}
}

func (c *Client) closedErr() error {
	<-c.done
	if c.err != nil && !errors.Is(c.err, io.EOF) {
		return fmt.Errorf("%w: %v", ErrClosed, c.err)
	}
	return ErrClosed
}

// Done is closed once the channel has ended.
func (c *Client) Done() <-chan struct{} { return c.done }

// Close ends the channel; calls waiting for answers fail with ErrClosed.
func (c *Client) Close() { c.shut() }

// read delivers answers and serves call_tool requests until the channel
// ends. The plugin is not trusted: an answer for a call never sent, an
// unknown op or an oversized or malformed frame ends the channel (the
// core then replaces the plugin process).
func (c *Client) read() {
	defer func() {
		c.mu.Lock()
		for _, ch := range c.pending {
			close(ch)
		}
		for _, cancel := range c.tools {
			cancel()
		}
		c.pending = nil
		c.mu.Unlock()
		close(c.done)
	}()
	rr := newRightsReader(c.f)
	defer rr.closeAll()
	for {
		body, err := frame.ReadRawLimit(rr, c.maxFrame)
		if err != nil {
			c.err = err
			return
		}
		var m message
		if err := json.Unmarshal(body, &m); err != nil {
			c.err = fmt.Errorf("malformed frame from the plugin: %w", err)
			return
		}
		switch m.Op {
		case opAnswer, opLoan:
			if m.Op == opLoan && m.Loan != nil && m.Loan.fresh() {
				if m.files = rr.take(loanFiles); m.files == nil {
					c.err = fmt.Errorf("the plugin lent worker %d without its descriptors", m.Loan.Worker)
					return
				}
			}
			c.mu.Lock()
			sent := m.ID <= c.next
			ch, ok := c.pending[m.ID]
			valid := sent && (m.Op == opAnswer && m.Answer != nil || m.Op == opLoan && m.Loan != nil)
			if valid {
				delete(c.pending, m.ID)
			}
			c.mu.Unlock()
			if !valid {
				closeFiles(m.files)
				c.err = fmt.Errorf("the plugin answered request %d, which was never sent or carries no answer", m.ID)
				return
			}
			if ok {
				ch <- &m
			} else {
				// Its caller went away: the answer is dropped (a worker lent
				// to no one is given back by Client.Borrow's caller's
				// absence: see Borrow).
				c.dropped(&m)
			}
		case opToolCall:
			if m.ToolCall == nil {
				c.err = errors.New("the plugin sent a call_tool request without its request")
				return
			}
			c.mu.Lock()
			_, dup := c.tools[m.ID]
			over := len(c.tools) >= maxToolCalls
			var ctx context.Context
			if !dup && !over {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(context.Background())
				c.tools[m.ID] = cancel
			}
			c.mu.Unlock()
			switch {
			case dup:
				c.err = fmt.Errorf("the plugin sent call_tool request %d again while it was being served", m.ID)
				return
			case over:
				c.err = fmt.Errorf("the plugin has more than %d toolhost.call_tool requests in flight", maxToolCalls)
				return
			}
			go c.serveToolCall(ctx, m.ID, m.ToolCall)
		case opToolCancel:
			c.mu.Lock()
			if cancel := c.tools[m.ID]; cancel != nil {
				cancel()
			}
			c.mu.Unlock()
		default:
			c.err = fmt.Errorf("the plugin sent a frame of unknown op %q", m.Op)
			return
		}
	}
}

// serveToolCall answers one toolhost.call_tool request of tool code. ctx
// ends when the plugin stops waiting for the answer (the calling call's
// deadline or its end) or the channel ends.
func (c *Client) serveToolCall(ctx context.Context, id uint64, req *plugins.ToolCallRequest) {
	defer func() {
		c.mu.Lock()
		if cancel := c.tools[id]; cancel != nil {
			cancel()
			delete(c.tools, id)
		}
		c.mu.Unlock()
	}()
	answer := &plugins.ToolCallResponse{Error: "toolhost.call_tool is not available here"}
	c.mu.Lock()
	cb := c.callbacks
	c.mu.Unlock()
	if cb != nil {
		r, err := cb.CallTool(ctx, req)
		switch {
		case err != nil:
			answer = &plugins.ToolCallResponse{Error: err.Error()}
		case r != nil:
			answer = r
		}
	}
	c.send(&message{ID: id, Op: opToolAnswer, ToolAnswer: answer})
}

// Server is the plugin's end of a channel. It implements plugins.Callbacks
// over the channel (toolhost.call_tool of the calls it runs).
type Server struct {
	conn
	run    func(ctx context.Context, req *plugins.CallRequest) *plugins.CallResponse
	lender Lender

	mu      sync.Mutex
	calls   map[uint64]context.CancelFunc
	next    uint64
	waiting map[uint64]chan *plugins.ToolCallResponse
	// maxFrame is the core's bound on the frames it reads (SetMaxFrame).
	maxFrame atomic.Int64
}

// SetMaxFrame tells the server the core's bound on the frames it reads
// (plugins.Limits.AnswerBytes of the group loaded): a frame past it would
// end the channel, and with it every call in flight, so that an answer
// past it is sent as a result error instead, and a toolhost.call_tool
// request past it is refused to the tool code that made it. Until it is
// called the bound is frame.MaxSize.
func (s *Server) SetMaxFrame(n int) { s.maxFrame.Store(int64(n)) }

// tooLarge reports whether a frame body of n bytes is past the core's
// bound.
func (s *Server) tooLarge(n int) (limit int64, over bool) {
	limit = s.maxFrame.Load()
	if limit <= 0 || limit > frame.MaxSize {
		limit = frame.MaxSize
	}
	return limit, int64(n) > limit
}

// NewServer makes the plugin's end on f; Serve starts it. run runs one
// call (the runtime's Call).
func NewServer(f *os.File, run func(ctx context.Context, req *plugins.CallRequest) *plugins.CallResponse) *Server {
	return &Server{conn: conn{f: f, done: make(chan struct{})}, run: run,
		calls: map[uint64]context.CancelFunc{}, waiting: map[uint64]chan *plugins.ToolCallResponse{}}
}

// Serve reads calls until the channel ends, running each on its own
// goroutine, and returns why it ended (io.EOF when the core closed it).
// Every call still running is cancelled then.
func (s *Server) Serve() error {
	defer func() {
		s.mu.Lock()
		for _, cancel := range s.calls {
			cancel()
		}
		for _, ch := range s.waiting {
			close(ch)
		}
		s.calls, s.waiting = nil, nil
		s.mu.Unlock()
		close(s.done)
	}()
	for {
		body, err := frame.ReadRaw(s.f)
		if err != nil {
			s.err = err
			return err
		}
		var m message
		if err := json.Unmarshal(body, &m); err != nil {
			s.err = fmt.Errorf("malformed frame from the core: %w", err)
			return s.err
		}
		switch m.Op {
		case opCall:
			if m.Call == nil {
				continue
			}
			ctx, cancel := context.WithCancel(context.Background())
			s.mu.Lock()
			s.calls[m.ID] = cancel
			s.mu.Unlock()
			go s.serveCall(ctx, m.ID, m.Call)
		case opSpawn, opCheck, opKill:
			go s.serveLend(&m)
		case opCancel:
			s.mu.Lock()
			if cancel := s.calls[m.ID]; cancel != nil {
				cancel()
			}
			s.mu.Unlock()
		case opToolAnswer:
			s.mu.Lock()
			ch := s.waiting[m.ID]
			delete(s.waiting, m.ID)
			s.mu.Unlock()
			if ch != nil && m.ToolAnswer != nil {
				ch <- m.ToolAnswer
			}
		}
	}
}

func (s *Server) serveCall(ctx context.Context, id uint64, req *plugins.CallRequest) {
	resp := s.run(ctx, req)
	s.mu.Lock()
	if cancel := s.calls[id]; cancel != nil {
		cancel()
		delete(s.calls, id)
	}
	s.mu.Unlock()
	body, err := encode(&message{ID: id, Op: opAnswer, Answer: resp})
	if err == nil {
		if limit, over := s.tooLarge(len(body)); over {
			body, err = encode(&message{ID: id, Op: opAnswer, Answer: &plugins.CallResponse{Runtime: resp.Runtime, Worker: resp.Worker,
				DurationUs: resp.DurationUs, Note: resp.Note, Retire: resp.Retire, Error: &plugins.ToolError{Kind: plugins.ErrResult,
					Message: fmt.Sprintf("the answer is %d bytes of JSON, larger than the limit of %d (the result limit and the printed output)", len(body), limit)}}})
		}
	}
	if err != nil {
		body, _ = encode(&message{ID: id, Op: opAnswer, Answer: &plugins.CallResponse{Error: &plugins.ToolError{Kind: plugins.ErrRuntime, Message: err.Error()}}})
	}
	s.sendRaw(body)
}

// CallTool implements plugins.Callbacks: the request goes to the core over
// the channel, and its answer comes back on it.
func (s *Server) CallTool(ctx context.Context, req *plugins.ToolCallRequest) (*plugins.ToolCallResponse, error) {
	ch := make(chan *plugins.ToolCallResponse, 1)
	s.mu.Lock()
	if s.waiting == nil {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	s.next++
	id := s.next
	s.waiting[id] = ch
	s.mu.Unlock()
	forget := func() {
		s.mu.Lock()
		if s.waiting != nil {
			delete(s.waiting, id)
		}
		s.mu.Unlock()
	}
	body, err := encode(&message{ID: id, Op: opToolCall, ToolCall: req})
	if err != nil {
		forget()
		return nil, err
	}
	if limit, over := s.tooLarge(len(body)); over {
		forget()
		return nil, fmt.Errorf("the request is %d bytes of JSON, larger than the limit of %d", len(body), limit)
	}
	if err := s.sendRaw(body); err != nil {
		forget()
		return nil, err
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, ErrClosed
		}
		return r, nil
	case <-ctx.Done():
		forget()
		s.send(&message{ID: id, Op: opToolCancel})
		return nil, ctx.Err()
	}
}

// Close ends the channel.
func (s *Server) Close() { s.shut() }
