// Package cpython runs tool code in a pool of "python3 -I" worker
// processes that speak framed JSON over dedicated pipes (fd 3 for requests,
// fd 4 for answers), never over stdout.
package cpython

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

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
	tail    *tail.Buffer
	pid     int
	exited  chan struct{}
	waitErr error
	calls   int
}

// errTimeout is a worker that did not answer in time; it has been killed.
var errTimeout = errors.New("timeout")

// startWorker starts a worker and waits for it to be ready (its modules
// imported) until the deadline.
func startWorker(python string, env []string, init initFrame, deadline time.Time) (*worker, error) {
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
	cmd := exec.Command(python, "-I", "-B", "-c", runnerSource)
	cmd.Env = env
	cmd.Dir = init.Scratch
	cmd.ExtraFiles = []*os.File{reqR, respW}
	cmd.Stdout, cmd.Stderr = outW, outW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	reqR.Close()
	respW.Close()
	outW.Close()
	if err != nil {
		reqW.Close()
		respR.Close()
		outR.Close()
		return nil, fmt.Errorf("start %s: %w", python, err)
	}
	w := &worker{cmd: cmd, req: reqW, resp: respR, tail: tail.New(4096), pid: cmd.Process.Pid, exited: make(chan struct{})}
	// In the sandbox, the worker joins the workers' cgroup before it runs
	// any tool code (it waits for its first frame).
	if cg := os.Getenv(plugins.EnvWorkerCgroup); cg != "" {
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
	go func() {
		w.waitErr = cmd.Wait()
		close(w.exited)
	}()
	init.Helper = helperSource
	var ready struct {
		Ready bool `json:"ready"`
	}
	if err := w.roundtrip(init, &ready, deadline); err != nil {
		w.kill()
		return nil, w.describeFailure("start", err)
	}
	return w, nil
}

// roundtrip writes one frame and reads the answer before the deadline. On
// any failure the worker is killed: a worker is never reused after an
// incomplete exchange. At the deadline a timer kills the worker's process
// group, which ends the blocked read.
func (w *worker) roundtrip(req, resp any, deadline time.Time) error {
	var timedOut atomic.Bool
	timer := time.AfterFunc(time.Until(deadline), func() {
		timedOut.Store(true)
		syscall.Kill(-w.pid, syscall.SIGKILL)
	})
	w.req.SetWriteDeadline(deadline)
	err := frame.Write(w.req, req)
	if err == nil {
		err = frame.Read(w.resp, resp)
	}
	timer.Stop()
	if err != nil {
		w.kill()
		if timedOut.Load() || errors.Is(err, os.ErrDeadlineExceeded) {
			return errTimeout
		}
		return err
	}
	return nil
}

// exchange is roundtrip for a call, during which the tool may call other
// tools through the host (toolhost.call_tool): such requests are answered
// on the worker's request pipe until the call's own answer comes.
func (w *worker) exchange(ctx context.Context, req, resp any, deadline time.Time, cb plugins.Callbacks) error {
	var timedOut atomic.Bool
	timer := time.AfterFunc(time.Until(deadline), func() {
		timedOut.Store(true)
		syscall.Kill(-w.pid, syscall.SIGKILL)
	})
	defer timer.Stop()
	fail := func(err error) error {
		w.kill()
		if timedOut.Load() {
			return errTimeout
		}
		return err
	}
	w.req.SetWriteDeadline(deadline)
	if err := frame.Write(w.req, req); err != nil {
		return fail(err)
	}
	for {
		body, err := frame.ReadRaw(w.resp)
		if err != nil {
			return fail(err)
		}
		var op struct {
			Op string `json:"op"`
		}
		json.Unmarshal(body, &op)
		if op.Op != "call_tool" {
			if err := json.Unmarshal(body, resp); err != nil {
				return fail(fmt.Errorf("malformed frame: %w", err))
			}
			return nil
		}
		var tc plugins.ToolCallRequest
		json.Unmarshal(body, &tc)
		answer := &plugins.ToolCallResponse{Error: "toolhost.call_tool is not available here"}
		if cb != nil {
			cctx, cancel := context.WithDeadline(ctx, deadline)
			a, err := cb.CallTool(cctx, &tc)
			cancel()
			if err != nil {
				answer = &plugins.ToolCallResponse{Error: err.Error()}
			} else {
				answer = a
			}
		}
		if err := frame.Write(w.req, answer); err != nil {
			return fail(err)
		}
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

// callAnswer is a worker's answer to a call.
type callAnswer struct {
	OK              bool               `json:"ok"`
	Result          json.RawMessage    `json:"result"`
	Error           *plugins.ToolError `json:"error"`
	Output          string             `json:"output"`
	OutputTruncated bool               `json:"output_truncated"`
	DurationUs      int64              `json:"duration_us"`
}

type callFrame struct {
	Op      string          `json:"op"`
	Module  string          `json:"module"`
	Func    string          `json:"func"`
	Args    json.RawMessage `json:"args"`
	Context json.RawMessage `json:"context,omitempty"`
}

type describeFrame struct {
	Op        string             `json:"op"`
	Callables []plugins.Callable `json:"callables"`
}
