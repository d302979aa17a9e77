package channel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"toolhost/plugins"
)

// Lending: the direct path of the cpython runtime. The plugin process
// starts and watches its workers, but lends each one's pipes to the core,
// which then calls the worker itself: a call crosses one process boundary
// (core → worker) instead of two. The core asks for a worker (opSpawn);
// the plugin answers with an opLoan that carries, as SCM_RIGHTS, the
// worker's request pipe, its answer pipe and a pidfd of the worker. After
// a call the core checks on its own that nothing was left behind (the
// worker's threads, the workers' cgroup); when it cannot tell, it asks the
// plugin (opCheck), which runs the same after-call checks as on its own
// calls and answers whether the worker may serve again. opKill stops a
// lent worker for good (its whole process group) and answers why it
// stopped, as the plugin saw it (exit status, last output).
const (
	opSpawn = "spawn" // core → plugin: lend one more worker
	opCheck = "check" // core → plugin: the after-call checks of Loan.Worker
	opKill  = "kill"  // core → plugin: stop Loan.Worker for good
	opLoan  = "loan"  // plugin → core: the answer of the three
)

// loanFiles is how many descriptors a fresh loan carries: the request
// pipe, the answer pipe, the pidfd.
const loanFiles = 3

// Loan is a worker lent to the core, or what became of it.
type Loan struct {
	// Worker is the worker's id: its pid in the sandbox.
	Worker int `json:"worker"`
	// Fresh is set on the answer of opSpawn that lends a worker: Files
	// came with it.
	Fresh bool `json:"fresh,omitempty"`
	// Alive says that the worker may serve again (after opCheck).
	Alive bool `json:"alive,omitempty"`
	// Note says what the plugin did (a worker replaced because a call left
	// threads or processes behind).
	Note string `json:"note,omitempty"`
	// Error says why a worker could not be lent (opSpawn), or why it
	// stopped (opKill).
	Error *plugins.ToolError `json:"error,omitempty"`

	// Files are a fresh loan's request pipe, answer pipe and pidfd, on the
	// core's side; the borrower owns them.
	Files []*os.File `json:"-"`
}

func (l *Loan) fresh() bool { return l.Fresh && l.Error == nil }

// Lender lends the workers of a runtime (the cpython pool) to the core.
type Lender interface {
	// Lend starts a worker, or takes an idle one, for the core: its id and
	// its request pipe, answer pipe and a pidfd, which the channel sends
	// and then closes.
	Lend(ctx context.Context) (worker int, files []*os.File, err error)
	// Check runs the after-call checks on a lent worker once a call on it
	// has ended; alive reports whether it may serve again (otherwise it
	// has been stopped), note what was done.
	Check(worker int, callable string) (alive bool, note string)
	// Kill stops a lent worker for good and says why it stopped, seen
	// from the plugin (during names the call).
	Kill(worker int, during string) *plugins.ToolError
}

// ErrNoLender is the answer to opSpawn of a plugin whose runtime lends no
// workers.
var ErrNoLender = errors.New("the plugin's runtime lends no workers")

// Borrow asks the plugin for a worker; the Loan's Files are then the
// caller's. A failure to start one is the Loan's Error.
func (c *Client) Borrow(ctx context.Context) (*Loan, error) {
	m, err := c.request(ctx, &message{Op: opSpawn})
	if err != nil {
		return nil, err
	}
	l := m.Loan
	l.Files = m.files
	if l.Error == nil && len(l.Files) != loanFiles {
		return nil, fmt.Errorf("%w: the plugin lent worker %d without its descriptors", ErrClosed, l.Worker)
	}
	return l, nil
}

// Check asks the plugin to run its after-call checks on a worker.
func (c *Client) Check(ctx context.Context, worker int, callable string) (*Loan, error) {
	m, err := c.request(ctx, &message{Op: opCheck, Loan: &Loan{Worker: worker}, Callable: callable})
	if err != nil {
		return nil, err
	}
	return m.Loan, nil
}

// Kill asks the plugin to stop a worker for good; the answer says why it
// stopped.
func (c *Client) Kill(ctx context.Context, worker int, during string) (*Loan, error) {
	m, err := c.request(ctx, &message{Op: opKill, Loan: &Loan{Worker: worker}, Callable: during})
	if err != nil {
		return nil, err
	}
	return m.Loan, nil
}

// dropped handles an answer whose caller went away: a worker lent to no
// one is stopped at once, so that it does not hold one of the group's
// places.
func (c *Client) dropped(m *message) {
	if m.Op != opLoan || m.Loan == nil || !m.Loan.fresh() {
		return
	}
	closeFiles(m.files)
	go c.Kill(context.Background(), m.Loan.Worker, "a loan no one waited for")
}

// SetLender makes the server answer the core's requests for workers with
// l (before Serve).
func (s *Server) SetLender(l Lender) { s.lender = l }

// serveLend answers one of opSpawn, opCheck, opKill.
func (s *Server) serveLend(m *message) {
	reply := &message{ID: m.ID, Op: opLoan, Loan: &Loan{}}
	if m.Loan != nil {
		reply.Loan.Worker = m.Loan.Worker
	}
	l := s.lender
	switch {
	case l == nil:
		reply.Loan.Error = &plugins.ToolError{Kind: plugins.ErrRuntime, Message: ErrNoLender.Error()}
	case m.Op == opSpawn:
		id, files, err := l.Lend(context.Background())
		if err != nil {
			te, ok := err.(*plugins.ToolError)
			if !ok {
				te = &plugins.ToolError{Kind: plugins.ErrRuntime, Message: err.Error()}
			}
			reply.Loan.Error = te
			break
		}
		reply.Loan.Worker, reply.Loan.Fresh = id, true
		err = s.sendRights(reply, files)
		closeFiles(files)
		if err != nil {
			l.Kill(id, "its loan")
		}
		return
	case m.Op == opCheck:
		reply.Loan.Alive, reply.Loan.Note = l.Check(reply.Loan.Worker, m.Callable)
	case m.Op == opKill:
		reply.Loan.Error = l.Kill(reply.Loan.Worker, m.Callable)
	}
	s.send(reply)
}

// sendRights sends m with files as SCM_RIGHTS on its first byte.
func (c *conn) sendRights(m *message, files []*os.File) error {
	body, err := marshalFrame(m)
	if err != nil {
		return err
	}
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	rights := unix.UnixRights(fds...)
	rc, err := c.f.SyscallConn()
	if err != nil {
		return err
	}
	c.wm.Lock()
	defer c.wm.Unlock()
	// The first byte carries the descriptors; the rest follows as usual.
	var serr error
	werr := rc.Write(func(fd uintptr) bool {
		serr = unix.Sendmsg(int(fd), body[:1], rights, nil, 0)
		return serr != unix.EAGAIN
	})
	if werr != nil {
		return werr
	}
	if serr != nil {
		return serr
	}
	_, err = c.f.Write(body[1:])
	return err
}

// rightsReader reads the stream with recvmsg, keeping the descriptors that
// come with it, in order; at most maxQueued wait to be taken (more are
// closed at once).
type rightsReader struct {
	f      *os.File
	rc     syscall.RawConn
	queued []*os.File
	oob    []byte
}

const maxQueued = 4 * loanFiles

func newRightsReader(f *os.File) *rightsReader {
	rc, _ := f.SyscallConn()
	return &rightsReader{f: f, rc: rc, oob: make([]byte, unix.CmsgSpace(4*maxQueued))}
}

// Read implements io.Reader.
func (r *rightsReader) Read(p []byte) (int, error) {
	if r.rc == nil {
		return r.f.Read(p)
	}
	var n, oobn int
	var rerr error
	err := r.rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), p, r.oob, unix.MSG_CMSG_CLOEXEC)
		return rerr != unix.EAGAIN
	})
	if err == nil {
		err = rerr
	}
	if oobn > 0 {
		r.keep(r.oob[:oobn])
	}
	if err != nil {
		return 0, err
	}
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (r *rightsReader) keep(oob []byte) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return
	}
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if len(r.queued) >= maxQueued {
				unix.Close(fd)
				continue
			}
			r.queued = append(r.queued, os.NewFile(uintptr(fd), "lent"))
		}
	}
}

// take returns the first n descriptors received, or nil when fewer came.
func (r *rightsReader) take(n int) []*os.File {
	if len(r.queued) < n {
		return nil
	}
	out := append([]*os.File(nil), r.queued[:n]...)
	r.queued = r.queued[n:]
	return out
}

func (r *rightsReader) closeAll() {
	closeFiles(r.queued)
	r.queued = nil
}

func closeFiles(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}
