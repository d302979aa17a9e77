package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"toolhost/core/definition"
	"toolhost/plugins"
)

// Spares keeps sandboxes started ahead of the groups that will use them:
// a spare is a whole sandbox (namespaces, cgroups, minimal root, the plugin
// process, go-plugin's handshake and the data channel) whose /group is an
// empty folder of its own, made for no group and having run no code.
// Opening a group whose sandbox has the same shape (runtime, interpreter,
// limits, network; no virtual environment) takes one: the group's listed
// files are linked or copied into its folder and the group is loaded in
// it, so that a cold start pays for the load and the first call only. A
// spare serves one group, once; another is started in its place.
type Spares struct {
	perShape int

	mu       sync.Mutex
	ready    map[string][]*spare
	starting map[string]int
	// within reports whether a tenant may take a spare (ShareWith).
	within func(owner string) bool
	closed bool
	wg     sync.WaitGroup
}

// spare is one sandbox started ahead.
type spare struct {
	proc *process
	view string
}

// NewSpares keeps perShape sandboxes ready for each shape of sandbox that
// a group has been opened with.
func NewSpares(perShape int) *Spares {
	return &Spares{perShape: perShape, ready: map[string][]*spare{}, starting: map[string]int{}}
}

// Ready is how many spares are ready, over every shape.
func (s *Spares) Ready() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.ready {
		n += len(r)
	}
	return n
}

// Close stops every spare, and every one still starting once it has.
func (s *Spares) Close() {
	s.mu.Lock()
	s.closed = true
	ready := s.ready
	s.ready = map[string][]*spare{}
	s.mu.Unlock()
	for _, r := range ready {
		for _, sp := range r {
			sp.stop()
		}
	}
	s.wg.Wait()
}

func (sp *spare) stop() {
	sp.proc.stop()
	os.RemoveAll(sp.view)
}

// shape is what must be equal for a group to use a spare: everything its
// sandbox and plugin process are made of, but for its files.
func (g *Group) shape() string {
	py := ""
	if g.opts.Python != nil {
		py = g.opts.Python.Executable
	}
	sb := g.opts.Sandbox
	b, _ := json.Marshal(struct {
		Exe, Runtime, Python string
		Network              plugins.Network
		Limits               plugins.Limits
		ViaPlugin            bool
		// The sandbox: what the probe found and how it is used.
		Mechanisms []plugins.Mechanism
		Active     map[string]bool
		CPUs       float64
		Slirp, Via string
		Unconfined bool
		SandboxNet plugins.Network
	}{g.opts.Executable, g.runtime, py, g.opts.Network, g.load.Limits, g.opts.ViaPlugin,
		sb.Mechanisms, sb.active, sb.CPUs, sb.slirp, sb.exe, sb.Unconfined, sb.Network})
	return string(b)
}

// spareable reports whether g may run in a spare: a confined sandbox
// without a virtual environment.
func (g *Group) spareable() bool {
	return g.opts.Spares != nil && g.opts.Sandbox.confined() && g.venv == ""
}

// refillDelay is how long after its opening a group that took or wanted a
// spare starts the next one, unless its first call has answered before.
const refillDelay = time.Second

// refillSpares starts the spares' refill for g's shape, once: at the end
// of g's first call, or refillDelay after its opening, whichever comes
// first. A spare's start (a whole sandbox, its plugin process and its
// worker) would otherwise compete for the CPU with the group's own first
// call, which a spare is there to make fast.
func (g *Group) refillSpares() {
	g.refillOnce.Do(func() { g.opts.Spares.refill(g) })
}

// take returns a ready spare of the shape for owner, or nil: none is
// ready, or owner (a tenant; "" is none, the local CLI, never refused)
// has more groups warm than its share (ShareWith).
func (s *Spares) take(shape, owner string) *spare {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.ready[shape]
	if len(r) == 0 {
		return nil
	}
	if owner != "" && s.within != nil && !s.within(owner) {
		return nil
	}
	sp := r[len(r)-1]
	s.ready[shape] = r[:len(r)-1]
	return sp
}

// ShareWith gives the spares only to tenants within their share of w's
// warm groups (Warm.WithinShare), or alone on the node (issue 25): a
// tenant cycling more groups than its share took every spare as it came,
// and another tenant's new group then waited for a whole sandbox start,
// slowed by the first one's crowd. Over its share, a tenant's cold starts
// start their own sandboxes; the spare stays for the others. Call it
// before the spares are used.
func (s *Spares) ShareWith(w *Warm) {
	s.within = w.WithinShare
}

// refill starts spares of g's shape in the background until perShape are
// ready or starting.
func (s *Spares) refill(g *Group) {
	shape := g.shape()
	s.mu.Lock()
	if s.closed || len(s.ready[shape])+s.starting[shape] >= s.perShape {
		s.mu.Unlock()
		return
	}
	s.starting[shape]++
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		sp, err := newSpare(g)
		s.mu.Lock()
		s.starting[shape]--
		closed := s.closed
		if err == nil && !closed {
			s.ready[shape] = append(s.ready[shape], sp)
		}
		s.mu.Unlock()
		if err == nil && closed {
			sp.stop()
		}
	}()
}

// newSpare starts a sandbox of g's shape for no group: a placeholder group
// with no files, tools or modules, whose /group is a fresh empty folder.
func newSpare(g *Group) (*spare, error) {
	view, err := os.MkdirTemp("", fmt.Sprintf("toolhost-group-%d-", os.Getpid()))
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(view, 0o755); err != nil {
		os.RemoveAll(view)
		return nil, err
	}
	load := *g.load
	load.Group, load.Modules, load.Callables = "", map[string]string{}, nil
	opts := g.opts
	opts.OnToolCall, opts.Owner = nil, ""
	placeholder := &Group{def: &definition.Group{Name: "(spare)"}, root: view, opts: opts, load: &load,
		runtime: g.runtime, view: view, spare: true}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	p, err := placeholder.launch(ctx)
	if err != nil {
		os.RemoveAll(view)
		return nil, err
	}
	return &spare{proc: p, view: view}, nil
}

// adopt loads g in a spare: its listed files go into the spare's folder
// (linked where the file system allows, else copied), then the plugin
// process loads and checks the group as usual. A spare whose files cannot
// be placed is stopped and its folder removed: taken, it is no longer the
// spares' to stop, and not yet the group's.
func (g *Group) adopt(ctx context.Context, sp *spare) error {
	for _, d := range g.def.Dependencies {
		src := filepath.Join(g.root, filepath.FromSlash(d.Path))
		dst := filepath.Join(sp.view, filepath.FromSlash(d.Path))
		err := os.MkdirAll(filepath.Dir(dst), 0o755)
		if err == nil {
			if err = placeFile(src, dst); os.IsNotExist(err) {
				err = nil // missing: the load says so
			}
		}
		if err != nil {
			sp.stop()
			return err
		}
	}
	if g.ownsView {
		os.RemoveAll(g.view)
	}
	g.view, g.ownsView = sp.view, true
	sp.proc.cg.setOwner(g.opts.Owner)
	return g.load1(ctx, sp.proc, true)
}

// placeFile makes dst hold src's bytes, readable by others: a hard link
// when src is readable by others and on the same file system, else a copy.
func placeFile(src, dst string) error {
	// Never through a symbolic link, nor from a device or a pipe: the core
	// runs as root, and would read whatever it names (a group that lists
	// one then starts its own sandbox).
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	if fi.Mode().Perm()&0o004 != 0 && os.Link(src, dst) == nil {
		return nil
	}
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
