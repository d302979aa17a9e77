// Package pyhost is toolhost's plugin process ("toolhost pyhost", started
// by go-plugin inside the sandbox): it holds one group and runs its
// callables on the cpython worker pool or the embedded gpython runtime
// (when the binary links it: see GPython).
package pyhost

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"golang.org/x/sys/unix"

	"toolhost/plugins"
	"toolhost/plugins/channel"
	"toolhost/plugins/service"
	"toolhost/pyhost/cpython"
)

// Runtime is what a group runs on.
type Runtime interface {
	Load(ctx context.Context, callables []plugins.Callable) (*plugins.LoadResponse, error)
	Call(ctx context.Context, req *plugins.CallRequest) *plugins.CallResponse
	Close()
}

// Server implements plugins.Host.
type Server struct {
	mu   sync.Mutex
	rt   Runtime
	last *plugins.LoadResponse
	// data is the data channel the core calls over: its calls'
	// toolhost.call_tool requests go back over it too. Without one (a
	// plugin process started by hand) nothing can call.
	data *channel.Server
	// early is the first worker, started from the core's load request
	// before Load arrives (cpython only), until a Load adopts or drops it.
	early *cpython.Early
	// AfterCall runs after every cpython call with the pid of the worker
	// that served it (or 0) and the pids of the live workers: the sandbox
	// kills what the call left behind and returns how many processes it
	// killed. (gpython code cannot start processes.)
	AfterCall func(worker int, live []int) int
	// gpython makes a gpython group's runtime; nil in a plugin binary
	// without it.
	gpython GPython
}

// GPython makes the gpython runtime of a load request, with the callbacks
// that serve toolhost.call_tool. The gpython interpreter is linked only
// into plugin binaries that give one to Serve (its packages' set-up costs
// every start of the process about 4 ms of CPU and 150 page faults here):
// a cpython group's sandbox runs a binary without it.
type GPython func(req *plugins.LoadRequest, cb plugins.Callbacks) Runtime

// Load implements plugins.Host.
func (s *Server) Load(ctx context.Context, req *plugins.LoadRequest) (*plugins.LoadResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rt != nil {
		s.rt.Close()
		s.rt = nil
	}
	var callbacks plugins.Callbacks
	if s.data != nil {
		callbacks = s.data
		// The core reads no frame past the group's answer bound.
		s.data.SetMaxFrame(req.Limits.AnswerBytes())
	}
	var rt Runtime
	switch req.Runtime {
	case plugins.RuntimeCPython:
		if req.Python == "" {
			return nil, &plugins.ToolError{Kind: plugins.ErrLoad, Message: "the cpython runtime needs a python3 interpreter, and none was given"}
		}
		p := cpython.New(req, workerEnv(req.Scratch))
		if s.early != nil && !p.Adopt(s.early) {
			s.early.Discard()
		}
		s.early = nil
		p.AfterCall = s.AfterCall
		p.Callbacks = callbacks
		rt = p
	case plugins.RuntimeGPython:
		s.dropEarly()
		if s.gpython == nil {
			return nil, &plugins.ToolError{Kind: plugins.ErrLoad, Message: "this plugin process runs cpython groups only: it was started without the gpython runtime"}
		}
		rt = s.gpython(req, callbacks)
	default:
		s.dropEarly()
		return nil, fmt.Errorf("unknown runtime %q", req.Runtime)
	}
	out, err := rt.Load(ctx, req.Callables)
	if err != nil {
		rt.Close()
		return nil, err
	}
	s.rt, s.last = rt, out
	return out, nil
}

// dropEarly discards the early worker, if any.
func (s *Server) dropEarly() {
	if s.early != nil {
		s.early.Discard()
		s.early = nil
	}
}

// startEarly starts the first worker of the load request the core put in
// plugins.EnvPreload, or, in a spare sandbox, a worker waiting for the
// group that will adopt the spare (plugins.EnvSpareWorker): cpython only.
// It removes the variables.
func (s *Server) startEarly() {
	data, spare := os.Getenv(plugins.EnvPreload), os.Getenv(plugins.EnvSpareWorker)
	os.Unsetenv(plugins.EnvPreload)
	os.Unsetenv(plugins.EnvSpareWorker)
	waiting := data == "" && spare != ""
	if waiting {
		data = spare
	}
	var req plugins.LoadRequest
	if data == "" || json.Unmarshal([]byte(data), &req) != nil || req.Runtime != plugins.RuntimeCPython || req.Python == "" {
		return
	}
	if waiting {
		// A spare answers go-plugin's handshake, and so counts as ready,
		// once its worker is set up and waits: nobody waits for a spare,
		// and a group that adopts it finds its interpreter warm.
		s.early = cpython.StartWaiting(&req, workerEnv(req.Scratch))
		ctx, cancel := context.WithTimeout(context.Background(), spareWorkerWait)
		s.early.Wait(ctx)
		cancel()
		return
	}
	s.early = cpython.StartEarly(&req, workerEnv(req.Scratch))
}

// spareWorkerWait bounds how long a spare's plugin process waits for its
// worker to be set up before it answers the handshake.
const spareWorkerWait = 10 * time.Second

// workerEnv is the whole environment of a worker: nothing of the host's.
func workerEnv(scratch string) []string {
	return []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"LANG=C.UTF-8",
		"HOME=" + scratch,
		"TMPDIR=" + scratch,
		"PYTHONDONTWRITEBYTECODE=1", // for what the tools start: -I makes the worker itself ignore it, hence -B
		"PYTHONUNBUFFERED=1",
	}
}

// Describe implements plugins.Host.
func (s *Server) Describe(context.Context, *plugins.Empty) (*plugins.LoadResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		return nil, fmt.Errorf("no group is loaded")
	}
	return s.last, nil
}

// Call runs one call that came over the data channel on the loaded group.
func (s *Server) Call(ctx context.Context, req *plugins.CallRequest) *plugins.CallResponse {
	s.mu.Lock()
	rt := s.rt
	s.mu.Unlock()
	if rt == nil {
		return &plugins.CallResponse{Error: &plugins.ToolError{Kind: plugins.ErrRuntime, Message: "no group is loaded"}}
	}
	return rt.Call(ctx, req)
}

// lender is the loaded runtime when it lends workers to the core.
func (s *Server) lender() (channel.Lender, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.rt.(channel.Lender); ok {
		return l, nil
	}
	return nil, channel.ErrNoLender
}

// Lend implements channel.Lender over the loaded runtime.
func (s *Server) Lend(ctx context.Context) (int, []*os.File, error) {
	l, err := s.lender()
	if err != nil {
		return 0, nil, err
	}
	return l.Lend(ctx)
}

// Check implements channel.Lender over the loaded runtime.
func (s *Server) Check(worker int, callable string) (bool, string) {
	l, err := s.lender()
	if err != nil {
		return false, ""
	}
	return l.Check(worker, callable)
}

// Kill implements channel.Lender over the loaded runtime.
func (s *Server) Kill(worker int, during string) *plugins.ToolError {
	l, err := s.lender()
	if err != nil {
		return &plugins.ToolError{Kind: plugins.ErrRuntime, Message: err.Error()}
	}
	return l.Kill(worker, during)
}

// Shutdown implements plugins.Host.
func (s *Server) Shutdown(context.Context, *plugins.Empty) (*plugins.Empty, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropEarly()
	if s.rt != nil {
		s.rt.Close()
		s.rt = nil
	}
	return &plugins.Empty{}, nil
}

// Serve runs the plugin process: it answers go-plugin's handshake on
// stdout and serves until the core goes away. gpython, if not nil, runs
// gpython groups; without it they fail to load.
func Serve(afterCall func(worker int, live []int) int, gpython GPython) {
	// First of all, the process becomes non-dumpable: its /proc files
	// (mem, environ, fd, ...) belong to root, and ptrace-style access
	// (open /proc/PID/mem, process_vm_readv, pidfd_getfd) needs
	// CAP_SYS_PTRACE, so that workers and the tool code they run cannot
	// read its memory (the go-plugin TLS key is there). It stays
	// non-dumpable: the workers it starts are new programs (execve), which
	// are dumpable again, as they must be for the sweep to read them.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "toolhost pyhost: cannot make the process non-dumpable: %v\n", err)
		os.Exit(1)
	}
	srv := &Server{AfterCall: afterCall, gpython: gpython}
	if f := channel.Inherited(); f != nil {
		srv.data = channel.NewServer(f, srv.Call)
		srv.data.SetLender(srv)
		go srv.data.Serve()
	}
	srv.startEarly()
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: service.Handshake,
		Plugins:         service.PluginMap(srv),
		GRPCServer:      plugin.DefaultGRPCServer,
		TLSProvider:     service.PluginTLS,
		Logger:          hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: os.Stderr, JSONFormat: true}),
	})
	srv.Shutdown(context.Background(), nil)
}
