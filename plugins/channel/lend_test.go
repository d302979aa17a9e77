package channel

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"toolhost/plugins"
	"toolhost/plugins/frame"
)

// fakeLender lends a real process's pipes: a cat that echoes what it reads
// on its stdin to its stdout.
type fakeLender struct {
	t       *testing.T
	mu      sync.Mutex
	cmds    map[int]*exec.Cmd
	checked []string
	killed  []string
	fail    error
}

func (l *fakeLender) Lend(context.Context) (int, []*os.File, error) {
	if l.fail != nil {
		return 0, nil, l.fail
	}
	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	cmd := exec.Command("cat")
	cmd.Stdin, cmd.Stdout = inR, outW
	if err := cmd.Start(); err != nil {
		l.t.Fatal(err)
	}
	inR.Close()
	outW.Close()
	pidfd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
	if err != nil {
		l.t.Fatal(err)
	}
	l.mu.Lock()
	l.cmds[cmd.Process.Pid] = cmd
	l.mu.Unlock()
	return cmd.Process.Pid, []*os.File{inW, outR, os.NewFile(uintptr(pidfd), "pidfd")}, nil
}

func (l *fakeLender) Check(worker int, callable string) (bool, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checked = append(l.checked, callable)
	return callable != "leaves a thread", "checked " + callable
}

func (l *fakeLender) Kill(worker int, during string) *plugins.ToolError {
	l.mu.Lock()
	cmd := l.cmds[worker]
	l.killed = append(l.killed, during)
	l.mu.Unlock()
	if cmd == nil {
		return &plugins.ToolError{Kind: plugins.ErrCrash, Message: "no such worker"}
	}
	cmd.Process.Kill()
	cmd.Wait()
	return &plugins.ToolError{Kind: plugins.ErrCrash, Message: "stopped during " + during}
}

func lendPair(t *testing.T, l Lender) *Client {
	c, s := pair(t, nil, echo)
	if l != nil {
		s.SetLender(l)
	}
	return c
}

// A lent worker's descriptors reach the core and lead to the worker; the
// checks and the kill reach the lender and come back with their answers.
func TestLendAWorker(t *testing.T) {
	l := &fakeLender{t: t, cmds: map[int]*exec.Cmd{}}
	c := lendPair(t, l)
	ctx := context.Background()
	loan, err := c.Borrow(ctx)
	if err != nil || loan.Error != nil || len(loan.Files) != loanFiles {
		t.Fatalf("borrow: %+v, %v", loan, err)
	}
	req, resp, pidfd := loan.Files[0], loan.Files[1], loan.Files[2]
	defer req.Close()
	defer resp.Close()
	defer pidfd.Close()
	// The pipes are the worker's: what goes in comes back through it.
	if _, err := req.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(resp, buf); err != nil || string(buf) != "ping\n" {
		t.Fatalf("through the lent pipes: %q, %v", buf, err)
	}
	// The descriptors arrived close-on-exec.
	for _, f := range loan.Files {
		if flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC == 0 {
			t.Errorf("a lent descriptor is not close-on-exec: %#x, %v", flags, err)
		}
	}
	tests := []struct {
		callable string
		alive    bool
	}{
		{"m.f", true},
		{"leaves a thread", false},
	}
	for _, tt := range tests {
		got, err := c.Check(ctx, loan.Worker, tt.callable)
		if err != nil || got.Alive != tt.alive || got.Note != "checked "+tt.callable || got.Worker != loan.Worker {
			t.Errorf("check after %q: %+v, %v", tt.callable, got, err)
		}
	}
	got, err := c.Kill(ctx, loan.Worker, "the call to m.f")
	if err != nil || got.Error == nil || got.Error.Message != "stopped during the call to m.f" {
		t.Fatalf("kill: %+v, %v", got, err)
	}
	// The worker is dead: its pidfd is readable.
	if n, err := unix.Poll([]unix.PollFd{{Fd: int32(pidfd.Fd()), Events: unix.POLLIN}}, 1000); err != nil || n != 1 {
		t.Errorf("the pidfd of the killed worker: %d, %v", n, err)
	}
	// Calls still work beside the lending.
	if r, err := c.Call(ctx, &plugins.CallRequest{}); err != nil || !r.OK {
		t.Errorf("a call after the lending: %+v, %v", r, err)
	}
}

// A runtime that lends nothing, or fails to start a worker, says so.
func TestBorrowFailures(t *testing.T) {
	tests := []struct {
		name   string
		lender Lender
		want   string
	}{
		{"no lender", nil, ErrNoLender.Error()},
		{"a start that fails", &fakeLender{fail: &plugins.ToolError{Kind: plugins.ErrCrash, Message: "the python worker exited with status 1 during start"}}, "exited with status 1"},
		{"a plain error", &fakeLender{fail: errors.New("no pidfd")}, "no pidfd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := lendPair(t, tt.lender)
			loan, err := c.Borrow(context.Background())
			if err != nil || loan.Error == nil || !strings.Contains(loan.Error.Message, tt.want) || len(loan.Files) != 0 {
				t.Fatalf("borrow: %+v, %v; want an error with %q", loan, err, tt.want)
			}
		})
	}
}

// A loan that comes after its borrower went away is given back at once:
// it must not hold one of the group's places.
func TestLateLoanIsKilled(t *testing.T) {
	gate := make(chan struct{})
	l := &slowLender{fakeLender: fakeLender{t: t, cmds: map[int]*exec.Cmd{}}, gate: gate}
	c := lendPair(t, l)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.Borrow(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("borrow: %v", err)
	}
	close(gate)
	deadline := time.Now().Add(5 * time.Second)
	for {
		l.mu.Lock()
		n := len(l.killed)
		l.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the late loan was not given back")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type slowLender struct {
	fakeLender
	gate chan struct{}
}

func (l *slowLender) Lend(ctx context.Context) (int, []*os.File, error) {
	<-l.gate
	return l.fakeLender.Lend(ctx)
}

// A loan without its descriptors breaks the protocol: the channel ends.
func TestLoanWithoutDescriptors(t *testing.T) {
	c, plug := rawClient(t, nil)
	go func() {
		s := &conn{f: plug}
		var m message
		if body, err := readFrame(plug); err == nil {
			m = body
		}
		s.send(&message{ID: m.ID, Op: opLoan, Loan: &Loan{Worker: 7, Fresh: true}})
	}()
	if _, err := c.Borrow(context.Background()); !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "without its descriptors") {
		t.Fatalf("borrow: %v", err)
	}
}

func readFrame(f *os.File) (message, error) {
	var m message
	body, err := frame.ReadRaw(f)
	if err != nil {
		return m, err
	}
	return m, json.Unmarshal(body, &m)
}
