// Package cpython runs tool code in a pool of "python3 -I" worker
// processes that speak framed JSON over dedicated pipes (fd 3 for requests,
// fd 4 for answers), never over stdout.
package cpython

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"toolhost/core/tail"
	"toolhost/plugins"
	"toolhost/plugins/frame"
)

//go:embed runner.py
var runnerSource string

//go:embed toolhost.py
var helperCore string

//go:embed blocks_helpers.py
var blockHelpers string

// helperSource is the toolhost module of cpython workers.
var helperSource = helperCore + "\n\n" + blockHelpers

// BlockHelpers is the Python source of the block helpers, which the
// gpython runtime adds to its toolhost module.
func BlockHelpers() string { return blockHelpers }

// initFrame is the first frame a worker reads.
type initFrame struct {
	ID      string            `json:"id"`
	Root    string            `json:"root"`
	Modules map[string]string `json:"modules"`
	Scratch string            `json:"scratch"`
	Limits  plugins.Limits    `json:"limits"`
	Helper  string            `json:"helper"`
}

// worker is one python3 process.
type worker struct {
	cmd     *exec.Cmd
	req     *os.File // our end of the worker's fd 3
	resp    *os.File // our end of the worker's fd 4
	respFd  int      // resp's descriptor, for FIONREAD
	tail    *tail.Buffer
	pid     int
	exited  chan struct{}
	waitErr error
	calls   int
	// status is the worker's /proc/PID/status, kept open: it is read
	// after every call (threads), and re-reading an open file spares the
	// path lookup and the open of each time.
	status *os.File
}

// errTimeout is a worker that did not answer in time; it has been killed.
var errTimeout = errors.New("timeout")

// errCancelled is a call whose caller went away; its worker has been
// killed.
var errCancelled = errors.New("cancelled")

// describeFrameLimit bounds the ready frame and describe answers (the
// signatures of a group's callables).
const describeFrameLimit = 16 << 20

// startWorker starts a worker and waits for it to be ready (its modules
// imported) until the deadline. started, if set, is told the worker's pid
// as soon as its process exists (so that the after-call sweep knows it
// for a live worker); run is held across the start.
func startWorker(python string, env []string, init initFrame, deadline time.Time, started func(pid int), run *sync.RWMutex) (*worker, error) {
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	// Answers come over a blocking pipe read by a plain system call: the
	// reading thread is woken directly when the worker writes, without a
	// round through the network poller. Timeouts kill the worker, which
	// ends the read.
	respR, respW, err := blockingPipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		respR.Close()
		respW.Close()
		return nil, err
	}
	cmd := exec.Command(python, "-I", "-S", "-B", "-c", runnerSource)
	cmd.Env = env
	cmd.Dir = init.Scratch
	cmd.ExtraFiles = []*os.File{reqR, respW}
	cmd.Stdout, cmd.Stderr = outW, outW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if run != nil {
		run.RLock()
	}
	onSpawnThread(func() { err = cmd.Start() })
	if err == nil && started != nil {
		started(cmd.Process.Pid)
	}
	if run != nil {
		run.RUnlock()
	}
	reqR.Close()
	respW.Close()
	outW.Close()
	if err != nil {
		reqW.Close()
		respR.Close()
		outR.Close()
		return nil, fmt.Errorf("start %s: %w", python, err)
	}
	w := &worker{cmd: cmd, req: reqW, resp: respR, respFd: int(respR.Fd()), tail: tail.New(4096), pid: cmd.Process.Pid, exited: make(chan struct{})}
	// In the sandbox, the worker joins the workers' cgroup before it runs
	// any tool code (it waits for its first frame).
	for _, cg := range workerCgroups() {
		if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(strconv.Itoa(w.pid)), 0); err != nil {
			reqW.Close()
			respR.Close()
			outR.Close()
			syscall.Kill(-w.pid, syscall.SIGKILL)
			cmd.Wait()
			return nil, fmt.Errorf("move the worker into its cgroup: %w", err)
		}
	}
	go func() {
		io.Copy(w.tail, outR)
		outR.Close()
	}()
	w.status, _ = os.Open("/proc/" + strconv.Itoa(w.pid) + "/status")
	go func() {
		w.waitErr = cmd.Wait()
		if w.status != nil {
			w.status.Close()
		}
		close(w.exited)
	}()
	init.Helper = helperSource
	ready, err := w.roundtrip(&init, describeFrameLimit, deadline)
	if err == nil && !ready.Ready {
		w.kill()
		err = errForeign
	}
	if err != nil {
		return nil, w.describeFailure("start", err)
	}
	return w, nil
}

// errForeign is a frame that does not belong to the exchange in flight:
// a wrong or missing request id, an unknown op, or bytes written after
// the answer. The worker has been killed.
var errForeign = errors.New("the worker sent an answer that does not belong to this call")

// answerFrame is any frame a worker writes on fd 4, decoded once: a call's
// answer, a toolhost.call_tool request (op "call_tool"), the ready frame or
// a describe answer. Every one carries the id of the request in flight.
type answerFrame struct {
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

// newID is a fresh request id: random, so that tool code cannot write an
// answer ahead for a call yet to come.
func newID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// roundtrip writes one request frame (with a fresh id) and reads its
// answer before the deadline; frames larger than maxFrame are refused. On
// any failure the worker is killed: a worker is never reused after an
// incomplete exchange. At the deadline a timer kills the worker's process
// group, which ends the blocked read.
func (w *worker) roundtrip(req request, maxFrame int, deadline time.Time) (*answerFrame, error) {
	return w.exchange(context.Background(), req, maxFrame, deadline, nil, "")
}

// request is a frame to a worker; exchange stamps it with a fresh id.
type request interface{ setID(id string) }

// exchange writes one request and reads frames until its answer comes,
// serving toolhost.call_tool requests on the way (answered on the
// worker's request pipe) with the core's Callbacks and the call's token.
// The host does not trust the worker: a frame larger than maxFrame, a
// frame without the request's id, or any byte left on the pipe after the
// answer (a frame for no call in flight) kills the worker.
func (w *worker) exchange(ctx context.Context, req request, maxFrame int, deadline time.Time, cb plugins.Callbacks, token string) (*answerFrame, error) {
	id := newID()
	req.setID(id)
	var timedOut atomic.Bool
	timer := time.AfterFunc(time.Until(deadline), func() {
		timedOut.Store(true)
		syscall.Kill(-w.pid, syscall.SIGKILL)
	})
	defer timer.Stop()
	// A caller that goes away stops its own call: the worker is killed,
	// as on a timeout, and nothing else.
	var cancelled atomic.Bool
	stopWatch := context.AfterFunc(ctx, func() {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			timedOut.Store(true)
		} else if !timedOut.Load() {
			cancelled.Store(true)
		}
		syscall.Kill(-w.pid, syscall.SIGKILL)
	})
	defer stopWatch()
	fail := func(err error) (*answerFrame, error) {
		w.kill()
		if cancelled.Load() {
			return nil, errCancelled
		}
		if timedOut.Load() || errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, errTimeout
		}
		return nil, err
	}
	// Bytes already waiting were written when no request was in flight.
	if w.pending() {
		return fail(errForeign)
	}
	w.req.SetWriteDeadline(deadline)
	if err := frame.Write(w.req, req); err != nil {
		return fail(err)
	}
	for {
		body, err := frame.ReadRawLimit(w.resp, maxFrame)
		if err != nil {
			return fail(err)
		}
		var a answerFrame
		if err := json.Unmarshal(body, &a); err != nil {
			return fail(fmt.Errorf("malformed frame: %w", err))
		}
		if a.ID != id {
			return fail(errForeign)
		}
		switch a.Op {
		case "":
			if w.pending() {
				return fail(errForeign)
			}
			return &a, nil
		case "call_tool":
		default:
			return fail(errForeign)
		}
		answer := &plugins.ToolCallResponse{Error: "toolhost.call_tool is not available here"}
		if cb != nil && token != "" {
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
		if err := frame.Write(w.req, answer); err != nil {
			return fail(err)
		}
	}
}

// pending reports whether the worker has written bytes that no one has
// read yet on its answer pipe.
func (w *worker) pending() bool {
	n, err := unix.IoctlGetInt(w.respFd, unix.TIOCINQ) // FIONREAD
	return err != nil || n > 0
}

// threads is how many threads the worker process has (/proc's Threads:),
// or 0 when it cannot be read.
func (w *worker) threads() int {
	if w.status == nil {
		return 0
	}
	var buf [4096]byte
	n, err := w.status.ReadAt(buf[:], 0)
	if n == 0 && err != nil {
		return 0
	}
	s := string(buf[:n])
	i := strings.Index(s, "\nThreads:")
	if i < 0 {
		return 0
	}
	s = s[i+len("\nThreads:"):]
	if j := strings.IndexByte(s, '\n'); j >= 0 {
		s = s[:j]
	}
	threads, _ := strconv.Atoi(strings.TrimSpace(s))
	return threads
}

// leftThreads reports whether the worker has more threads than its own
// one after a call. A thread that a call joined may still be in its last
// steps of exiting: it is given a moment before it counts.
func (w *worker) leftThreads() (int, bool) {
	deadline := time.Now().Add(100 * time.Millisecond)
	for {
		n := w.threads()
		if n <= 1 {
			return n, false
		}
		if time.Now().After(deadline) {
			return n, true
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// blockingPipe makes a pipe whose read end is in blocking mode (os.Pipe's
// are non-blocking and go through the network poller).
func blockingPipe() (r, w *os.File, err error) {
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(fds[0]), "worker-answers"), os.NewFile(uintptr(fds[1]), "worker-fd4"), nil
}

// kill kills the worker's whole process group and waits for the worker.
func (w *worker) kill() {
	syscall.Kill(-w.pid, syscall.SIGKILL)
	w.cmd.Process.Kill()
	select {
	case <-w.exited:
	case <-time.After(5 * time.Second):
	}
	w.req.Close()
	w.resp.Close()
}

// alive reports whether the worker process is still running.
func (w *worker) alive() bool {
	select {
	case <-w.exited:
		return false
	default:
		return true
	}
}

// describeFailure explains why a worker stopped answering: its exit
// status and the last lines it wrote to stderr.
func (w *worker) describeFailure(during string, err error) *plugins.ToolError {
	if errors.Is(err, errTimeout) {
		return &plugins.ToolError{Kind: plugins.ErrTimeout, Message: "the worker did not answer in time during " + during + "; it was killed"}
	}
	if errors.Is(err, errCancelled) {
		return &plugins.ToolError{Kind: plugins.ErrCancelled, Message: "the caller went away during " + during + "; its worker was stopped"}
	}
	if errors.Is(err, errForeign) {
		return &plugins.ToolError{Kind: plugins.ErrCrash, Message: fmt.Sprintf("the worker sent an answer that does not belong to %s; it was replaced", during)}
	}
	var tl *frame.TooLargeError
	if errors.As(err, &tl) {
		return &plugins.ToolError{Kind: plugins.ErrResult, Message: fmt.Sprintf(
			"the answer of %s is %d bytes, more than the limit of %d (the result limit and the printed output); its worker was replaced", during, tl.Size, tl.Limit)}
	}
	select {
	case <-w.exited:
	case <-time.After(2 * time.Second):
	}
	status := "is still running"
	if ps := w.cmd.ProcessState; ps != nil {
		status = plugins.ExitStatus(ps)
	}
	msg := fmt.Sprintf("the python worker (pid %d) %s during %s", w.pid, status, during)
	if last := strings.TrimSpace(w.tail.String()); last != "" {
		msg += "; its last output:\n" + last
	}
	return &plugins.ToolError{Kind: plugins.ErrCrash, Message: msg}
}

type callFrame struct {
	ID      string          `json:"id"`
	Op      string          `json:"op"`
	Module  string          `json:"module"`
	Func    string          `json:"func"`
	Args    json.RawMessage `json:"args"`
	Context json.RawMessage `json:"context,omitempty"`
	// Convert is plugins.CallRequest.Convert.
	Convert map[string]json.RawMessage `json:"convert,omitempty"`
}

func (f *callFrame) setID(id string) { f.ID = id }

type describeFrame struct {
	ID        string             `json:"id"`
	Op        string             `json:"op"`
	Callables []plugins.Callable `json:"callables"`
}

func (f *describeFrame) setID(id string) { f.ID = id }

func (f *initFrame) setID(id string) { f.ID = id }

// workerCgroups are the cgroups a worker joins in the sandbox: the
// workers' pids cgroup and the sandbox's memory cgroup, which holds the
// workers only (the plugin process is bounded by its address space, and
// gpython code can make neither files nor shared memory).
func workerCgroups() []string {
	var out []string
	for _, env := range []string{plugins.EnvWorkerCgroup, plugins.EnvWorkerMemoryCgroup} {
		if cg := os.Getenv(env); cg != "" {
			out = append(out, cg)
		}
	}
	return out
}
