// Package cpython runs tool code in a pool of "python3 -I" worker
// processes that speak framed JSON over dedicated pipes (fd 3 for requests,
// fd 4 for answers), never over stdout.
package cpython

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"toolhost/core/tail"
	"toolhost/plugins"
	proto "toolhost/plugins/worker"
)

//go:embed runner.py
var runnerSource string

// RunnerSource is the Python source of the cpython worker's runner, which
// the host compiles ahead (see runnerArgs).
func RunnerSource() string { return runnerSource }

// runnerBoot starts a worker from the runner compiled ahead by the host's
// interpreter: argv[1] is its file, marshal's sys.hexversion then the code
// (the code is read only when this interpreter's version made it); argv[2]
// is the runner's source, compiled as "python -c" would when the file
// cannot be read or was made by another version. The compilation costs a
// worker's start about 20 ms of CPU here (the compiler's memory: about 500
// page faults of 1,400 in all). sys.argv is "-c" alone for tool code, as
// with "python -c", and the runner runs in __main__ as it does there, with
// nothing of the boot left in it (its frame stays below the runner's).
const runnerBoot = `def _runner():
    import marshal, sys
    try:
        with open(sys.argv[1], "rb") as f:
            if marshal.load(f) == sys.hexversion:
                return marshal.load(f)
    except Exception:
        pass
    return compile(sys.argv[2], "<string>", "exec")
_code = _runner()
del _runner, __import__("sys").argv[1:]
exec(globals().pop("_code"))
`

// runnerArgs is the worker interpreter's arguments: the runner from its
// compiled file code, or from its source when code is "".
func runnerArgs(code string) []string {
	if code == "" {
		return []string{"-I", "-S", "-B", "-c", runnerSource}
	}
	return []string{"-I", "-S", "-B", "-c", runnerBoot, code, runnerSource}
}

// CompileRunner is the Python program that compiles the runner's source,
// read from standard input, into the file runnerBoot reads: run by the
// host's interpreter (never in a sandbox: a worker runs this file before
// it reads anything of its group, in every group's sandbox), it writes
// marshal's sys.hexversion, then the code, to standard output.
const CompileRunner = `import marshal, sys
code = compile(sys.stdin.read(), "<string>", "exec")
sys.stdout.buffer.write(marshal.dumps(sys.hexversion) + marshal.dumps(code))
`

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
	tail    *tail.Buffer
	pid     int
	exited  chan struct{}
	copied  chan struct{} // closed once its output is all in tail
	waitErr error
	calls   int
	// pidfd is a pidfd of the worker made with it (clone's CLONE_PIDFD),
	// so that it names this process and no other, ever; -1 when the
	// kernel gave none. It is closed once the worker has been reaped.
	pidfd int
	pidMu sync.Mutex
	// status is the worker's /proc/PID/status, kept open: it is read
	// after every call (threads), and re-reading an open file spares the
	// path lookup and the open of each time.
	status *os.File
}

// describeFrameLimit bounds the ready frame and describe answers (the
// signatures of a group's callables).
const describeFrameLimit = 16 << 20

// startWorker starts a worker (see spawnWorker) and waits for it to be
// ready (its modules imported) until the deadline. started, if set, is told the worker's pid
// as soon as its process exists (so that the after-call sweep knows it
// for a live worker); run is held across the start.
func startWorker(python, code string, env []string, init initFrame, deadline time.Time, started func(pid int), run *sync.RWMutex) (*worker, error) {
	w, err := spawnWorker(python, code, env, init.Scratch, started, run)
	if err != nil {
		return nil, err
	}
	if err := w.initialise(init, deadline); err != nil {
		return nil, err
	}
	return w, nil
}

// spawnWorker starts a worker's interpreter with its working folder dir,
// and returns once its process exists and has joined the workers'
// cgroups. The interpreter sets itself up (the runner's own imports, no
// group's) and then waits for its first frame: it has read nothing of any
// group until initialise sends one. code, when set, is the file of the
// runner compiled by the host's interpreter (plugins.LoadRequest's
// RunnerCode), which the worker runs in place of compiling the runner's
// source. started and run are as for startWorker.
func spawnWorker(python, code string, env []string, dir string, started func(pid int), run *sync.RWMutex) (*worker, error) {
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
	cmd := exec.Command(python, runnerArgs(code)...)
	cmd.Env = env
	cmd.Dir = dir
	cmd.ExtraFiles = []*os.File{reqR, respW}
	cmd.Stdout, cmd.Stderr = outW, outW
	pidfd := -1
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, PidFD: &pidfd}
	if run != nil {
		run.RLock()
	}
	if serr := onSpawnThread(func() { err = cmd.Start() }); serr != nil {
		err = serr
	}
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
	w := &worker{cmd: cmd, req: reqW, resp: respR, tail: tail.New(4096), pid: cmd.Process.Pid, exited: make(chan struct{}), copied: make(chan struct{}), pidfd: pidfd}
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
		close(w.copied)
	}()
	w.status, _ = os.Open("/proc/" + strconv.Itoa(w.pid) + "/status")
	go func() {
		w.waitErr = cmd.Wait()
		if w.status != nil {
			w.status.Close()
		}
		w.pidMu.Lock()
		if w.pidfd >= 0 {
			unix.Close(w.pidfd)
			w.pidfd = -1
		}
		w.pidMu.Unlock()
		close(w.exited)
	}()
	return w, nil
}

// initialise sends a spawned worker its first frame (the group's folder,
// modules, limits and the toolhost module) and waits until the deadline
// for it to be ready, its modules imported. On failure the worker has
// been killed.
func (w *worker) initialise(init initFrame, deadline time.Time) error {
	init.Helper = helperSource
	ready, err := w.roundtrip(&init, describeFrameLimit, deadline)
	if err == nil && !ready.Ready {
		w.kill()
		err = proto.ErrForeign
	}
	if err != nil {
		return w.describeFailure("start", err)
	}
	return nil
}

// roundtrip writes one request frame (with a fresh id) and reads its
// answer before the deadline; frames larger than maxFrame are refused. On
// any failure the worker is killed: a worker is never reused after an
// incomplete exchange. At the deadline a timer kills the worker's process
// group, which ends the blocked read.
func (w *worker) roundtrip(req proto.Request, maxFrame int, deadline time.Time) (*proto.Answer, error) {
	return w.exchange(context.Background(), req, maxFrame, deadline, nil, "")
}

// dupPidfd is a copy of the worker's pidfd, while the worker has not been
// reaped.
func (w *worker) dupPidfd() (int, error) {
	w.pidMu.Lock()
	defer w.pidMu.Unlock()
	if w.pidfd < 0 {
		return -1, unix.ESRCH
	}
	return unix.FcntlInt(uintptr(w.pidfd), unix.F_DUPFD_CLOEXEC, 0)
}

// conn is the worker's pipes, for an exchange.
func (w *worker) conn() *proto.Conn {
	return &proto.Conn{Req: w.req, Resp: w.resp, Stop: w.kill}
}

// exchange runs one exchange with the worker (proto.Conn.Exchange); on any
// failure the worker has been killed.
func (w *worker) exchange(ctx context.Context, req proto.Request, maxFrame int, deadline time.Time, cb plugins.Callbacks, token string) (*proto.Answer, error) {
	return w.conn().Exchange(ctx, req, maxFrame, deadline, cb, token)
}

// pending reports whether the worker has written bytes that no one has
// read yet on its answer pipe.
func (w *worker) pending() bool { return w.conn().Pending() }

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
	if te := proto.Failure(during, err); te != nil {
		return te
	}
	select {
	case <-w.exited:
		// Its last output may still be on its way into the tail: the
		// copy ends when the pipe does, with the worker (or, at most a
		// second later, when one of its children still holds it).
		select {
		case <-w.copied:
		case <-time.After(time.Second):
		}
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

type describeFrame struct {
	ID        string             `json:"id"`
	Op        string             `json:"op"`
	Callables []plugins.Callable `json:"callables"`
}

func (f *describeFrame) SetID(id string) { f.ID = id }

func (f *initFrame) SetID(id string) { f.ID = id }

// prepareFrame is the first frame of a worker started ahead of its group
// (StartWaiting): the toolhost module's source, which is every group's.
// Its answer says that the interpreter has set itself up and waits.
type prepareFrame struct {
	ID     string `json:"id"`
	Op     string `json:"op"`
	Helper string `json:"helper"`
}

func (f *prepareFrame) SetID(id string) { f.ID = id }

// prepare sends a spawned worker a prepare frame and waits until the
// deadline for its answer: the worker is then set up, the toolhost
// module compiled, and waits for its group's first frame. On failure the
// worker has been killed.
func (w *worker) prepare(deadline time.Time) error {
	ready, err := w.roundtrip(&prepareFrame{Op: "prepare", Helper: helperSource}, describeFrameLimit, deadline)
	if err == nil && !ready.Ready {
		w.kill()
		err = proto.ErrForeign
	}
	if err != nil {
		return w.describeFailure("start", err)
	}
	return nil
}

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
