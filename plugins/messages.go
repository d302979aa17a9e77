// Package plugins is the contract between toolhost's core and its plugin
// process (pyhost): the messages, the host interface, the sandbox's
// configuration (plugins/service holds the go-plugin handshake and the
// gRPC service written by hand with a JSON codec, no protoc step). Both
// sides import it; it imports neither.
package plugins

import (
	"encoding/json"
	"errors"
	"time"
)

// DefaultCallTimeout is the timeout of a call when neither the tool's
// timeout key nor --timeout says otherwise: the one default of the core,
// the pipeline and both runtimes.
const DefaultCallTimeout = 30 * time.Second

// Runtimes a group can run on.
const (
	RuntimeAuto    = "auto"
	RuntimeCPython = "cpython"
	RuntimeGPython = "gpython"
)

// Limits bound what tool code may use. Zero values mean the defaults that
// DefaultLimits gives.
type Limits struct {
	// MemoryBytes is the address space of one worker (RLIMIT_AS).
	MemoryBytes int64 `json:"memory_bytes"`
	// CPUSeconds is the CPU time of one worker (RLIMIT_CPU).
	CPUSeconds int `json:"cpu_seconds"`
	// OpenFiles is the open file descriptors of one process (RLIMIT_NOFILE).
	OpenFiles int `json:"open_files"`
	// Processes is the processes of the whole sandbox (RLIMIT_NPROC in its
	// user namespace).
	Processes int `json:"processes"`
	// FileSizeBytes is the largest file tool code may write (RLIMIT_FSIZE).
	FileSizeBytes int64 `json:"file_size_bytes"`
	// ResultBytes is the largest JSON result a call may return.
	ResultBytes int `json:"result_bytes"`
	// OutputBytes is how much printed output one call keeps.
	OutputBytes int `json:"output_bytes"`
	// Workers is how many calls of one group may run at once.
	Workers int `json:"workers"`
}

// DefaultLimits are the limits used where a field of Limits is zero.
var DefaultLimits = Limits{
	MemoryBytes:   1 << 30,
	CPUSeconds:    60,
	OpenFiles:     256,
	Processes:     128,
	FileSizeBytes: 64 << 20,
	ResultBytes:   1 << 20,
	OutputBytes:   64 << 10,
	Workers:       4,
}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits
	if l.MemoryBytes == 0 {
		l.MemoryBytes = d.MemoryBytes
	}
	if l.CPUSeconds == 0 {
		l.CPUSeconds = d.CPUSeconds
	}
	if l.OpenFiles == 0 {
		l.OpenFiles = d.OpenFiles
	}
	if l.Processes == 0 {
		l.Processes = d.Processes
	}
	if l.FileSizeBytes == 0 {
		l.FileSizeBytes = d.FileSizeBytes
	}
	if l.ResultBytes == 0 {
		l.ResultBytes = d.ResultBytes
	}
	if l.OutputBytes == 0 {
		l.OutputBytes = d.OutputBytes
	}
	if l.Workers == 0 {
		l.Workers = d.Workers
	}
	return l
}

// ErrorTextBytes bounds the message and the traceback of a tool's
// exception, each.
const ErrorTextBytes = 64 << 10

// AnswerBytes is the largest answer one call may send, as a worker's frame
// or as the plugin's answer to the core: the result, the printed output
// and an exception's text, each at its limit, JSON escaping included (a
// character escaped as \u00XX takes 6 bytes), and room for the rest. It is
// at most frame.MaxSize.
func (l Limits) AnswerBytes() int {
	l = l.WithDefaults()
	n := l.ResultBytes + 6*l.OutputBytes + 6*2*ErrorTextBytes + 64<<10
	if n > maxFrame {
		n = maxFrame
	}
	return n
}

// maxFrame is frame.MaxSize (package frame imports nothing of this one,
// and this one nothing of it).
const maxFrame = 64 << 20

// Callable names one module.callable of a group.
type Callable struct {
	Module string `json:"module"`
	Func   string `json:"func"`
}

// String returns "module.func".
func (c Callable) String() string { return c.Module + "." + c.Func }

// LoadRequest gives the plugin its group.
type LoadRequest struct {
	// Group is the group's name, for messages.
	Group string `json:"group"`
	// Root is the folder that holds the group's files.
	Root string `json:"root"`
	// Modules maps each module name to its file, relative to Root.
	Modules map[string]string `json:"modules"`
	// Callables are the implementations to import and describe.
	Callables []Callable `json:"callables"`
	// Runtime is cpython or gpython (auto is resolved before).
	Runtime string `json:"runtime"`
	// Python is the interpreter the cpython runtime runs (a venv's python
	// when the group has requirements).
	Python string `json:"python,omitempty"`
	// RunnerCode is the file of the cpython worker's runner compiled ahead
	// by the host's interpreter (SandboxRunnerCode in a sandbox), which
	// workers run in place of compiling the runner's source; empty when
	// there is none.
	RunnerCode string `json:"runner_code,omitempty"`
	// Scratch is the folder tool code may write to.
	Scratch string `json:"scratch"`
	Limits  Limits `json:"limits"`
}

// Param is one parameter of a Python signature.
type Param struct {
	Name string `json:"name"`
	// Kind is Python's inspect kind: POSITIONAL_ONLY, POSITIONAL_OR_KEYWORD,
	// VAR_POSITIONAL, KEYWORD_ONLY or VAR_KEYWORD.
	Kind       string `json:"kind"`
	HasDefault bool   `json:"has_default"`
}

// Signature describes one callable as the plugin found it.
type Signature struct {
	Callable
	// Error says why the callable could not be described (import failed,
	// no such name, not callable); Params is then empty.
	Error  *ToolError `json:"error,omitempty"`
	Params []Param    `json:"params,omitempty"`
	// File and Line are where the function is defined (File relative to
	// the group's folder), when the runtime knows.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

// LoadResponse answers a LoadRequest.
type LoadResponse struct {
	Runtime    string      `json:"runtime"`
	Signatures []Signature `json:"signatures"`
	// Refusals are the constructs of the group's modules that give other
	// answers than CPython's on this runtime (gpython), found before any
	// code runs; a group with any does not load there.
	Refusals []SourceProblem `json:"refusals,omitempty"`
}

// SourceProblem is a problem at a place in one of the group's files.
type SourceProblem struct {
	// File is the module's file, relative to the group's root.
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Message string `json:"message"`
}

// CallRequest runs one callable with keyword arguments.
type CallRequest struct {
	Callable
	// Args are the keyword arguments, already validated.
	Args json.RawMessage `json:"args"`
	// TimeoutMs bounds the call; the worker is killed and replaced past it.
	TimeoutMs int64 `json:"timeout_ms"`
	// Context is what the toolhost Python module shows tool code (session
	// id, variables, agent, state); it may be null. Tool code may read it,
	// and nothing it sends back is ever read as this context.
	Context json.RawMessage `json:"context,omitempty"`
	// Token names this call in the core's table of calls in flight (an
	// unguessable value the core made). The plugin process attaches it to
	// every toolhost.call_tool the call makes; the core keeps the call's
	// tenant, group, session and depth under it. It is never shown to tool
	// code.
	Token string `json:"token,omitempty"`
	// Convert says, for each argument whose type holds dates, how the
	// cpython worker turns its ISO strings into Python objects: "date",
	// "datetime", {"list": plan} or {"dict": plan}. gpython has no
	// datetime module: there they stay strings.
	Convert map[string]json.RawMessage `json:"convert,omitempty"`
}

// Error kinds of a failed call.
const (
	ErrException = "exception" // the tool raised
	ErrTimeout   = "timeout"   // past the deadline; the worker was killed
	ErrCrash     = "crash"     // the worker died
	ErrResult    = "result"    // the result is not JSON-serialisable or too large
	ErrLoad      = "load"      // the group or callable could not be loaded
	ErrRuntime   = "runtime"   // the host failed
	// ErrCancelled: the caller went away or cancelled the call; its worker
	// was stopped (the process and the other calls carry on).
	ErrCancelled = "cancelled"
	// ErrUnavailable: the server stopped the call because it is shutting
	// down; the call may be tried again elsewhere.
	ErrUnavailable = "unavailable"
)

// ToolError is a failed call or load, as the caller sees it.
type ToolError struct {
	Kind      string `json:"kind"`
	Type      string `json:"type,omitempty"`
	Message   string `json:"message"`
	Traceback string `json:"traceback,omitempty"`
	// Status is the HTTP status an exception carried: its status or
	// status_code attribute, or its response's (an int from 100 to 599);
	// 0 for none.
	Status int `json:"status,omitempty"`
	// Body is the error body an exception carried: its body attribute, or
	// its response's text, as text; "" for none.
	Body string `json:"body,omitempty"`
}

// AsToolError is err as a ToolError: itself when it is one (or wraps one),
// else a runtime error with its message.
func AsToolError(err error) *ToolError {
	var te *ToolError
	if errors.As(err, &te) {
		return te
	}
	return &ToolError{Kind: ErrRuntime, Message: err.Error()}
}

// Error implements error.
func (e *ToolError) Error() string {
	if e.Type != "" {
		return e.Type + ": " + e.Message
	}
	return e.Message
}

// CallResponse is the outcome of a call.
type CallResponse struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *ToolError      `json:"error,omitempty"`
	// Output is what the call printed (stdout and stderr), cut at the
	// output limit.
	Output          string `json:"output,omitempty"`
	OutputTruncated bool   `json:"output_truncated,omitempty"`
	// Worker identifies the process that served the call.
	Worker     int    `json:"worker"`
	Runtime    string `json:"runtime"`
	DurationUs int64  `json:"duration_us"`
	// Note says what the plugin process did on its own around the call,
	// for the host's log: e.g. a worker replaced because the call left
	// threads or processes behind. The call's answer stands regardless.
	Note string `json:"note,omitempty"`
	// Retire asks the core to replace the plugin process once its calls in
	// flight have finished (an abandoned gpython call overran and holds an
	// interpreter for good).
	Retire bool `json:"retire,omitempty"`
}

// Empty is the message of calls that take or give nothing.
type Empty struct{}
