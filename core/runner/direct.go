package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"toolhost/plugins"
	"toolhost/plugins/channel"
	proto "toolhost/plugins/worker"
)

// direct is the direct path of a sandboxed cpython group: the core calls
// the workers itself over the pipes that the plugin process lends it
// (plugins/channel's lending), one process boundary per call. The plugin
// process still starts, watches and stops the workers; the core asks it
// for one more when every worker it has is busy, and gives a worker back
// when a call went wrong or left something the core cannot clear alone.
//
// After each call, and before an idle worker serves the next one, the
// core checks from the host what the plugin's own checks would: no worker
// it holds has died (their pidfds), and the workers' pids cgroup holds no
// more tasks than those workers, so each has one thread and nothing else
// runs. When that holds nothing of the call can outlive it, and the worker
// serves the next call at once; otherwise the plugin runs its checks (and
// its sweep) first, as it does on its own calls.
type direct struct {
	data     *channel.Client
	limits   plugins.Limits
	cb       plugins.Callbacks
	pidsPath string
	// broken replaces the whole plugin process (a worker the plugin could
	// not stop).
	broken func()

	slots chan struct{} // one token per worker borrowed or being borrowed
	// idle are the borrowed workers waiting for a call, the one that
	// served last on top: a call goes to the worker whose process and
	// caches are warm, and the others sleep (a queue would hand sequential
	// calls to each worker in turn). freed holds a token per release.
	idleMu sync.Mutex
	idle   []*borrowed
	freed  chan struct{}

	mu  sync.Mutex
	all map[*borrowed]bool
	// pids is the workers' pids.current, kept open.
	pids *os.File
	// initChildren is the children of the sandbox's init, kept open, and
	// plugin the host pid of its plugin process, for cleanByProc.
	initChildren *os.File
	plugin       int
	// pluginStatus and pluginStat are the plugin process's
	// /proc/HOSTPID/status and its main thread's stat
	// (/proc/HOSTPID/task/HOSTPID/stat), opened at the first borrow (the
	// worker's parent) and kept open: pluginKilled reads them around each
	// call. They read ESRCH once the process is gone, whatever took its
	// pid since.
	pluginStatus, pluginStat *os.File
}

// borrowed is a worker lent to the core.
type borrowed struct {
	id    int // its pid in the sandbox
	conn  proto.Conn
	pidfd *os.File
	// pidfdNum and respNum are the descriptors of pidfd and of the
	// answer pipe (conn.Resp), for the polls around each call; valid
	// while the worker is in all (forget takes it out, then closes them).
	// respNum is -1 where the pipe's could not be read: the pipe is then
	// never taken as quiet by a poll, and Pending asks it.
	pidfdNum, respNum int32
	stat              *os.File // /proc/HOSTPID/stat
	// children is /proc/HOSTPID/task/HOSTPID/children, opened by
	// cleanByProc.
	children *os.File
	// during names the call in flight, for the plugin's account of a
	// failure.
	during string
	// stopOnce kills it (pidfd) and asks the plugin to stop it for good;
	// killed then gives the plugin's answer.
	stopOnce sync.Once
	killed   chan *channel.Loan
	// exchange is closed when the exchange in flight has returned (nil
	// before the first call).
	exchange atomic.Pointer[chan struct{}]
}

func newDirect(data *channel.Client, limits plugins.Limits, cb plugins.Callbacks, pidsPath string, broken func()) *direct {
	return &direct{data: data, limits: limits, cb: cb, pidsPath: pidsPath, broken: broken,
		slots: make(chan struct{}, limits.Workers), freed: make(chan struct{}, limits.Workers), all: map[*borrowed]bool{}}
}

// Call runs one call on a borrowed worker. Every failure of the call is in
// the response; an error means that the plugin process died during the
// call (the runner replaces it).
func (d *direct) Call(ctx context.Context, req *plugins.CallRequest) (*plugins.CallResponse, error) {
	start := time.Now()
	resp := &plugins.CallResponse{Runtime: plugins.RuntimeCPython}
	b, note, err := d.acquire(ctx)
	resp.Note = note
	if err != nil {
		if errors.Is(err, channel.ErrClosed) {
			// No worker had the call: the runner may run it on a new
			// plugin process.
			return nil, fmt.Errorf("%w: %v", channel.ErrNotSent, err)
		}
		resp.Error = plugins.AsToolError(err)
		resp.DurationUs = time.Since(start).Microseconds()
		return resp, nil
	}
	if d.pluginKilled(false) {
		// The plugin process died since the last call (killed from
		// outside; its workers die with it): the call is not given to
		// this sandbox, and the runner runs it on a new one.
		d.stop(b, "no call")
		d.forget(b)
		return nil, fmt.Errorf("%w: the plugin process is dead", channel.ErrNotSent)
	}
	resp.Worker = b.id
	timeout := time.Duration(req.TimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = plugins.DefaultCallTimeout
	}
	during := "the call to " + req.Callable.String()
	b.during = during
	ended := make(chan struct{})
	b.exchange.Store(&ended)
	ans, err := b.conn.Exchange(ctx, proto.CallOf(req), d.limits.AnswerBytes(), proto.Deadline(ctx, timeout), d.cb, req.Token)
	close(ended)
	if d.pluginKilled(true) {
		// Tool code killed the plugin process (os.kill(-1, 9), or its
		// parent's pid): the worker outlives the signal for a moment and
		// may answer, but the call broke its sandbox, so it failed, and
		// the runner replaces the process before the next call.
		d.stop(b, during)
		d.forget(b)
		return nil, fmt.Errorf("%w: the plugin process was killed during the call", channel.ErrClosed)
	}
	// The checks after an answer, in one poll (clean): nothing more on
	// the answer pipe (Exchange leaves that to this poll: conn's
	// AfterChecked), every borrowed worker alive, the workers' cgroup
	// holding them alone. Bytes after the answer fail the call as
	// Exchange would have.
	quiet := false
	if err == nil {
		if quiet = d.clean(b, true); !quiet && b.conn.Pending() {
			err = proto.ErrForeign
		}
	}
	if err != nil {
		if resp.Error = d.failure(b, during, err); resp.Error == nil {
			return nil, channel.ErrClosed
		}
		if resp.Error.Kind == plugins.ErrTimeout {
			resp.Error.Message = fmt.Sprintf("%s did not finish within %s; its worker was killed", req.Callable, timeout)
		}
		resp.DurationUs = time.Since(start).Microseconds()
		return resp, nil
	}
	tooLarge := proto.Bound(ans, d.limits)
	if tooLarge == nil && ans.OK {
		// As compact as the plugin's answers (the worker writes Python's
		// json.dumps), and checked to be JSON.
		var buf bytes.Buffer
		if err := json.Compact(&buf, ans.Result); err != nil {
			tooLarge = &plugins.ToolError{Kind: plugins.ErrResult, Message: "the worker's result is not JSON: " + err.Error()}
		} else {
			ans.Result = buf.Bytes()
		}
	}
	if tooLarge != nil {
		d.stop(b, during)
		d.forget(b)
	} else if n := d.after(b, req.Callable.String(), quiet); n != "" {
		resp.Note = strings.TrimPrefix(resp.Note+"; "+n, "; ")
	}
	resp.DurationUs = time.Since(start).Microseconds()
	proto.Respond(resp, ans, tooLarge)
	return resp, nil
}

// after gives the worker back to the idle ones when nothing of its call
// can be left (clean: what d.clean answered after the call), or asks the
// plugin's checks first; the worker is forgotten when the plugin stopped
// it.
func (d *direct) after(b *borrowed, callable string, clean bool) string {
	// clean implies that every lent worker has one thread (each alive
	// one holds at least one of the cgroup's tasks): no /proc read is
	// needed when it holds.
	if clean {
		d.release(b)
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), pluginWait)
	defer cancel()
	l, err := d.data.Check(ctx, b.id, callable)
	if err != nil {
		// A plugin process that cannot check its worker is replaced, and
		// everything in its sandbox with it.
		d.broken()
		d.forget(b)
		return "the plugin process could not check the worker after the call (" + err.Error() + "); it was replaced"
	}
	if !l.Alive {
		d.forget(b)
		return l.Note
	}
	d.release(b)
	return l.Note
}

// clean reports whether the workers' cgroup holds no more tasks than the
// borrowed workers, every one of which is alive (a pidfd is readable once
// its process has exited), and with pipe whether b's answer pipe is
// quiet too (no byte waits there, its writer is open): one poll for all.
// Without a workers' cgroup (rootless, nothing delegated) the processes
// of b's call are read instead (cleanByProc).
func (d *direct) clean(b *borrowed, pipe bool) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	resp := int32(-1)
	if pipe {
		if !d.all[b] || b.respNum < 0 {
			// Forgotten meanwhile (its sandbox replaced): its descriptors
			// are closed, and their numbers may be another file's.
			return false
		}
		resp = b.respNum
	}
	if d.pidsPath == "" {
		return d.cleanByProc(b) && d.allAlive(resp)
	}
	if d.pids == nil {
		f, err := os.Open(d.pidsPath)
		if err != nil {
			return false
		}
		d.pids = f
	}
	var buf [32]byte
	n, err := readOnce(d.pids, buf[:])
	if n == 0 || err != nil {
		return false
	}
	tasks, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil || tasks > len(d.all) {
		return false
	}
	return d.allAlive(resp)
}

// allAlive reports whether every borrowed worker is alive (a pidfd is
// readable once its process has exited) and, unless resp is -1, whether
// the answer pipe resp is quiet (readable: bytes wait there, or its
// writer is closed). d.mu is held.
func (d *direct) allAlive(resp int32) bool {
	var room [9]unix.PollFd
	fds := room[:0]
	for b := range d.all {
		fds = append(fds, unix.PollFd{Fd: b.pidfdNum, Events: unix.POLLIN})
	}
	if resp >= 0 {
		fds = append(fds, unix.PollFd{Fd: resp, Events: unix.POLLIN})
	}
	ready, err := unix.Poll(fds, 0)
	return err == nil && ready == 0
}

// cleanByProc is clean's check where the sandbox has no workers' cgroup:
// worker b has one thread and no child, and the sandbox's init has no
// child but the plugin process. That is all b's call can leave: tool code
// runs in the workers only, a process it starts is a child of its worker
// (one a thread started passes to the worker's main thread when the
// thread ends) or, once its parent is gone, an orphan of init (the seccomp
// filter refuses CLONE_PARENT and child subreapers, and the sandbox's pid
// namespace has no other reaper). Each worker is checked so after its
// calls and again before it serves the next one, as with the cgroup; an
// orphan of any worker fails every worker's check. Whatever cannot be read
// counts as not clean: the plugin's own checks decide then. Reading
// another process's children needs what ptrace needs, which the core has
// over its sandboxes (as root, or rootless as the owner of the user
// namespace above the sandbox's).
func (d *direct) cleanByProc(b *borrowed) bool {
	pid, plugin, threads, ok := b.procStat()
	if !ok || threads != 1 {
		return false
	}
	if b.children == nil {
		p := strconv.Itoa(pid)
		if b.children, _ = os.Open("/proc/" + p + "/task/" + p + "/children"); b.children == nil {
			return false
		}
	}
	if kids, ok := readChildren(b.children); !ok || kids != "" {
		return false
	}
	if d.initChildren == nil || d.plugin != plugin {
		_, init, ok := statFields(plugin)
		if !ok {
			return false
		}
		if d.initChildren != nil {
			d.initChildren.Close()
		}
		p := strconv.Itoa(init)
		if d.initChildren, _ = os.Open("/proc/" + p + "/task/" + p + "/children"); d.initChildren == nil {
			return false
		}
		d.plugin = plugin
	}
	kids, ok := readChildren(d.initChildren)
	return ok && kids == strconv.Itoa(plugin)
}

// readChildren reads a /proc/PID/task/TID/children file kept open: the
// children's pids, separated by spaces.
func readChildren(f *os.File) (string, bool) {
	var buf [256]byte
	n, err := readOnce(f, buf[:])
	if err != nil {
		return "", false
	}
	if n == len(buf) {
		return "", false // more children than a clean sandbox has
	}
	return strings.TrimSpace(string(buf[:n])), true
}

// statFields reads a process's own pid and its parent (in this process's
// pid namespace) from /proc/PID/stat.
func statFields(pid int) (self, ppid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	self, ppid, _, ok = parseStat(b)
	return self, ppid, ok
}

// parseStat reads pid, ppid and num_threads from a /proc/PID/stat line;
// a zombie or dead process is not ok.
func parseStat(b []byte) (pid, ppid, threads int, ok bool) {
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(s, " ", 2)[0]))
	if err != nil {
		return 0, 0, 0, false
	}
	// After the command: state, ppid, pgrp, session, tty_nr, tpgid,
	// flags, minflt, cminflt, majflt, cmajflt, utime, stime, cutime,
	// cstime, priority, nice, num_threads.
	f := strings.Fields(s[i+1:])
	if len(f) < 18 || f[0] == "Z" || f[0] == "X" {
		return 0, 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	threads, err2 := strconv.Atoi(f[17])
	return pid, ppid, threads, err1 == nil && err2 == nil
}

// failure is the error of a failed exchange: the worker has been stopped
// (by its pidfd); the plugin stops it for good and says why it stopped.
// It is nil when the plugin process is gone (its death ended the call).
func (d *direct) failure(b *borrowed, during string, err error) *plugins.ToolError {
	d.stop(b, during)
	var l *channel.Loan
	select {
	case l = <-b.killed:
	case <-time.After(pluginWait + time.Second):
	}
	d.forget(b)
	if te := proto.Failure(during, err); te != nil {
		return te
	}
	if l != nil && l.Error != nil {
		return l.Error
	}
	select {
	case <-d.data.Done():
		return nil
	default:
	}
	return &plugins.ToolError{Kind: plugins.ErrCrash, Message: fmt.Sprintf("the python worker (pid %d) stopped answering during %s: %v", b.id, during, err)}
}

// stop kills the worker at once through its pidfd, which ends a read
// blocked on its answer pipe unless something it started holds the pipe
// too, and asks the plugin to stop it for good: its whole process group,
// and what the sandbox holds of it. A plugin that cannot is replaced; so
// is one after whose kill the exchange in flight still does not end (a
// process the sweep missed holds the answer pipe, and the core's read of
// it would never return): the sandbox is killed with it, and the read
// ends.
func (d *direct) stop(b *borrowed, during string) {
	b.stopOnce.Do(func() {
		unix.PidfdSendSignal(int(b.pidfd.Fd()), unix.SIGKILL, nil, 0)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), pluginWait)
			defer cancel()
			l, err := d.data.Kill(ctx, b.id, during)
			if err != nil {
				d.broken()
				l = nil
			} else if ended := b.exchange.Load(); ended != nil {
				select {
				case <-*ended:
				case <-time.After(pluginWait):
					d.broken()
				}
			}
			b.killed <- l
		}()
	})
}

// acquire takes an idle worker, or borrows one more while fewer than the
// group's workers are borrowed, or waits for one.
func (d *direct) acquire(ctx context.Context) (*borrowed, string, error) {
	var note string
	for {
		if b := d.pop(); b != nil {
			if d.usable(b, &note) {
				return b, note, nil
			}
			continue
		}
		select {
		case <-d.freed:
		case d.slots <- struct{}{}:
			b, err := d.borrow(ctx)
			if err != nil {
				<-d.slots
				if ctx.Err() != nil {
					return nil, note, waitEnded(ctx)
				}
				return nil, note, err
			}
			return b, note, nil
		case <-ctx.Done():
			return nil, note, waitEnded(ctx)
		}
	}
}

// release puts a worker back on top of the idle ones.
func (d *direct) release(b *borrowed) {
	d.idleMu.Lock()
	d.idle = append(d.idle, b)
	d.idleMu.Unlock()
	select {
	case d.freed <- struct{}{}:
	default: // waiters have tokens enough already
	}
}

// pop takes the idle worker on top, or nil.
func (d *direct) pop() *borrowed {
	d.idleMu.Lock()
	defer d.idleMu.Unlock()
	n := len(d.idle)
	if n == 0 {
		return nil
	}
	b := d.idle[n-1]
	d.idle = d.idle[:n-1]
	return b
}

// waitEnded is the error of a call whose context ended while it waited
// for a worker.
func waitEnded(ctx context.Context) *plugins.ToolError {
	if errors.Is(ctx.Err(), context.Canceled) {
		return &plugins.ToolError{Kind: plugins.ErrCancelled, Message: "the caller went away while the call waited for a worker"}
	}
	return &plugins.ToolError{Kind: plugins.ErrTimeout, Message: "no worker became free in time: " + ctx.Err().Error()}
}

// usable reports whether an idle worker may serve a call: it wrote
// nothing while no call was in flight, and nothing runs beside it. Tool
// code can run after its call's checks (a timer's signal handler, a
// patched runner loop) and start a thread or a process there, which
// would see the next call: a worker with more than its thread is stopped
// and forgotten; when the workers' cgroup holds more than the borrowed
// workers, the plugin's checks (and sweep) decide first.
func (d *direct) usable(b *borrowed, note *string) bool {
	var why string
	if d.clean(b, true) {
		// Its answer pipe is quiet too: Exchange need not ask again.
		b.conn.Checked = true
		return true
	}
	if b.conn.Pending() {
		why = "wrote to its answer pipe between calls"
	} else if d.clean(b, false) {
		// Exchange need not ask the answer pipe again.
		b.conn.Checked = true
		return true
	} else if n := b.threads(); n > 1 {
		why = fmt.Sprintf("started %d threads between calls", n-1)
	} else if d.pluginKilled(false) {
		// The plugin died between calls (its workers die with it): the
		// call goes nowhere here, and borrow says so.
		d.forget(b)
		return false
	} else {
		return d.recheck(b, note)
	}
	*note = fmt.Sprintf("worker (pid %d) %s; it was replaced", b.id, why)
	d.stop(b, "no call")
	d.forget(b)
	return false
}

// recheck asks the plugin's after-call checks about an idle worker before
// it serves a call; the worker is forgotten when the plugin stopped it.
func (d *direct) recheck(b *borrowed, note *string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), pluginWait)
	defer cancel()
	l, err := d.data.Check(ctx, b.id, "no call (between calls)")
	if err != nil {
		d.broken()
		d.forget(b)
		*note = "the plugin process could not check an idle worker (" + err.Error() + "); it was replaced"
		return false
	}
	if l.Note != "" {
		*note = strings.TrimPrefix(*note+"; "+l.Note, "; ")
	}
	if !l.Alive {
		d.forget(b)
		return false
	}
	return true
}

// borrow asks the plugin for one more worker; a plugin process that is
// dead or dying is ErrClosed at once (its data channel may stay open a
// moment longer, and a request would wait for an answer that never comes).
func (d *direct) borrow(ctx context.Context) (*borrowed, error) {
	if d.pluginKilled(false) {
		return nil, fmt.Errorf("%w: the plugin process is dead", channel.ErrClosed)
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	l, err := d.data.Borrow(ctx)
	if err != nil {
		return nil, err
	}
	if l.Error != nil {
		return nil, l.Error
	}
	b := &borrowed{id: l.Worker, pidfd: l.Files[2], killed: make(chan *channel.Loan, 1)}
	b.conn = proto.Conn{Req: l.Files[0], Resp: l.Files[1], Stop: func() { d.stop(b, b.during) }, AfterChecked: true}
	b.pidfdNum, b.respNum = int32(b.pidfd.Fd()), respFd(l.Files[1])
	if pid, err := pidOf(b.pidfd); err == nil {
		b.stat, _ = os.Open("/proc/" + strconv.Itoa(pid) + "/stat")
	}
	d.mu.Lock()
	d.all[b] = true
	if d.pluginStatus == nil {
		// A worker is a child of the plugin process, which just lent it.
		if _, ppid, _, ok := b.procStat(); ok {
			p := strconv.Itoa(ppid)
			d.pluginStatus, _ = os.Open("/proc/" + p + "/status")
			// The main thread's own stat: the same fields as the
			// process's, without the sums over its threads.
			d.pluginStat, _ = os.Open("/proc/" + p + "/task/" + p + "/stat")
		}
	}
	d.mu.Unlock()
	return b, nil
}

// pluginKilled reports whether the plugin process is dead or dying: its
// files cannot be read (it is gone), it is a zombie, exiting, or has a
// SIGKILL pending. kill() marks the pending signals of a process and of
// each of its threads at once, before the call that sent it returns.
// thorough reads /proc/PID/status, where the thread group's mark (ShdPnd)
// stays until the process has exited: it is read after each call, so
// that a call whose tool code killed the plugin (os.kill(-1, 9), or its
// parent's pid) is seen so as soon as it answers, while the plugin may
// still be exiting and its data channel still open. Otherwise, before
// each call, the main thread's /proc/PID/task/PID/stat is read first
// (half the kernel's work of status): the main thread's own mark, then
// its PF_SIGNALED and PF_EXITING flags once it has taken the signal, then
// its zombie state. Between taking its mark and setting PF_SIGNALED the
// main thread shows none of them, running in the kernel's get_signal
// (about 1 kill in 250 was read so, state R, under no load): a main
// thread that is running is asked again through status. (stat's fields
// are not read at one instant: a main thread read as sleeping that takes
// its signal between the reading of flags and of the pending signals
// shows neither; before a call that only sends the call to a dying
// sandbox, which answers crash, and after a call status is read.)
// Without the files (they could not be opened) the data channel's end is
// all there is.
func (d *direct) pluginKilled(thorough bool) bool {
	d.mu.Lock()
	first, second := d.pluginStat, d.pluginStatus
	d.mu.Unlock()
	if thorough {
		first, second = second, first
	}
	if first == nil {
		select {
		case <-d.data.Done():
			return true
		default:
			return false
		}
	}
	var buf [4096]byte
	b, gone := readProcFile(first, buf[:])
	if gone {
		return true
	}
	// The first file's answer, and whether a running main thread makes
	// the other worth asking.
	var killed, ask bool
	if thorough {
		// A SIGKILL sent to the main thread alone (tgkill, tkill: tool
		// code may call them) marks no thread group's pending: between
		// taking it and setting PF_SIGNALED a running main thread shows
		// nothing in status. Its flags are read from stat then.
		killed = statusKilled(b)
		state := statusField(b, stateKey)
		ask = !killed && len(state) > 0 && state[0] == 'R'
	} else {
		var running bool
		killed, running = statKilled(b)
		ask = !killed && running
	}
	if !ask || second == nil {
		return killed
	}
	if b, gone = readProcFile(second, buf[:]); gone {
		return true
	}
	if thorough {
		killed, _ = statKilled(b)
		return killed
	}
	return statusKilled(b)
}

// readProcFile reads a /proc file kept open from its start into buf;
// gone when nothing could be read (the process is gone, or the file was
// closed with it).
func readProcFile(f *os.File, buf []byte) (b []byte, gone bool) {
	n, err := readOnce(f, buf)
	return buf[:n], n == 0 || err != nil
}

// readOnce reads a /proc or cgroup file kept open from its start in one
// pread(2), which fills buf when the file fits (os.File.ReadAt reads on
// until it meets the end: a second system call for every read, and
// these files are read around each call).
func readOnce(f *os.File, buf []byte) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var rerr error
	if err := rc.Control(func(fd uintptr) { n, rerr = unix.Pread(int(fd), buf, 0) }); err != nil {
		return 0, err
	}
	if rerr != nil {
		return 0, rerr
	}
	return n, nil
}

// sigkill is SIGKILL's bit in a mask of signals.
const sigkill = 1 << (9 - 1)

// statusKilled reads a /proc/PID/status: a zombie or dead process, or one
// with SIGKILL pending (its main thread's or its thread group's).
func statusKilled(b []byte) bool {
	if v := statusField(b, stateKey); len(v) == 0 || v[0] == 'Z' || v[0] == 'X' {
		return true
	}
	return maskHasKill(statusField(b, shdPndKey)) || maskHasKill(statusField(b, sigPndKey))
}

var stateKey, shdPndKey, sigPndKey = []byte("\nState:"), []byte("\nShdPnd:"), []byte("\nSigPnd:")

// statusField is the value of a "Key:\tvalue" line of a /proc/PID/status
// (key with its newline and colon), or nil.
func statusField(b, key []byte) []byte {
	i := bytes.Index(b, key)
	if i < 0 {
		return nil
	}
	v := b[i+len(key):]
	if j := bytes.IndexByte(v, '\n'); j >= 0 {
		v = v[:j]
	}
	return bytes.TrimSpace(v)
}

// maskHasKill reports whether a hexadecimal signal mask (status's SigPnd)
// has SIGKILL, bit 8 (the third hex digit from the right); a mask that is
// not there or not hex counts as yes.
func maskHasKill(v []byte) bool {
	if len(v) < 3 {
		return true
	}
	c := v[len(v)-3]
	var d byte
	switch {
	case c >= '0' && c <= '9':
		d = c - '0'
	case c >= 'a' && c <= 'f':
		d = c - 'a' + 10
	default:
		return true
	}
	return d&1 != 0
}

// statKilled reads a /proc/PID/stat: killed for a zombie or dead
// process, one whose main thread is exiting or has taken a fatal signal
// (PF_EXITING, PF_SIGNALED), or one with SIGKILL pending for its main
// thread; running when its main thread is running (state R), where it may
// be between taking a SIGKILL and marking itself signalled.
func statKilled(b []byte) (killed, running bool) {
	const pfExiting, pfSignaled = 0x4, 0x400
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return true, false
	}
	state := b[i+2]
	if state == 'Z' || state == 'X' {
		return true, false
	}
	// The fields after the command, from state (field 3): flags is field
	// 9, the pending signals field 31.
	var flags, pending uint64
	field, n := 3, uint64(0)
	for _, c := range b[i+2:] {
		if c == ' ' || c == '\n' {
			switch field {
			case 9:
				flags = n
			case 31:
				pending = n
			}
			if field == 31 {
				return flags&(pfExiting|pfSignaled) != 0 || pending&sigkill != 0, state == 'R'
			}
			field, n = field+1, 0
			continue
		}
		if c >= '0' && c <= '9' {
			n = n*10 + uint64(c-'0')
		}
	}
	return true, false
}

// pluginWait bounds the plugin's answer to a check or a kill; a plugin
// that does not answer in time is replaced.
const pluginWait = 5 * time.Second

// startTimeout bounds the borrowing of a worker, its start included.
const startTimeout = 30 * time.Second

// forget closes what the core holds of a stopped worker and frees its
// place.
func (d *direct) forget(b *borrowed) {
	d.mu.Lock()
	had := d.all[b]
	delete(d.all, b)
	d.mu.Unlock()
	if !had {
		return
	}
	b.conn.Req.Close()
	b.conn.Resp.Close()
	b.pidfd.Close()
	if b.stat != nil {
		b.stat.Close()
	}
	if b.children != nil {
		b.children.Close()
	}
	<-d.slots
}

// close forgets every worker (the plugin process is gone or going).
func (d *direct) close() {
	d.mu.Lock()
	bs := make([]*borrowed, 0, len(d.all))
	for b := range d.all {
		bs = append(bs, b)
	}
	if d.pids != nil {
		d.pids.Close()
		d.pids = nil
	}
	if d.initChildren != nil {
		d.initChildren.Close()
		d.initChildren = nil
	}
	for _, f := range []**os.File{&d.pluginStatus, &d.pluginStat} {
		if *f != nil {
			(*f).Close()
			*f = nil
		}
	}
	d.mu.Unlock()
	for _, b := range bs {
		unix.PidfdSendSignal(int(b.pidfd.Fd()), unix.SIGKILL, nil, 0)
		d.forget(b)
	}
}

// threads is the worker's number of threads (/proc/PID/stat's 20th
// field), or 0 when it cannot be read.
func (b *borrowed) threads() int {
	_, _, t, _ := b.procStat()
	return t
}

// procStat reads the worker's host pid, parent and threads from its
// /proc/PID/stat, kept open; ok is false once it is gone or a zombie.
func (b *borrowed) procStat() (pid, ppid, threads int, ok bool) {
	if b.stat == nil {
		return 0, 0, 0, false
	}
	var buf [1024]byte
	n, err := readOnce(b.stat, buf[:])
	if n == 0 || err != nil {
		return 0, 0, 0, false
	}
	return parseStat(buf[:n])
}

// pidOf is the pid, in this process's pid namespace, of a pidfd's process
// (its fdinfo's Pid line).
func pidOf(pidfd *os.File) (int, error) {
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(int(pidfd.Fd())))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Pid:"); ok {
			pid, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || pid <= 0 {
				return 0, fmt.Errorf("pidfd names no process here (%q)", v)
			}
			return pid, nil
		}
	}
	return 0, errors.New("no Pid in the pidfd's fdinfo")
}

// respFd is an answer pipe's descriptor, read without changing its mode
// (File.Fd puts a pollable descriptor back in blocking mode), or -1.
func respFd(f *os.File) int32 {
	fd := int32(-1)
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(u uintptr) { fd = int32(u) })
	}
	return fd
}
