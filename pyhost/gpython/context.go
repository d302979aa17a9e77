package gpython

import (
	gocontext "context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-python/gpython/py"
	"github.com/go-python/gpython/vm"

	"toolhost/plugins"

	// The safe parts of gpython's standard library. Its os, glob and
	// tempfile modules are deliberately not imported, so they are never
	// registered.
	_ "github.com/go-python/gpython/stdlib/binascii"
	_ "github.com/go-python/gpython/stdlib/builtin"
	_ "github.com/go-python/gpython/stdlib/math"
	_ "github.com/go-python/gpython/stdlib/string"
	_ "github.com/go-python/gpython/stdlib/sys"
	_ "github.com/go-python/gpython/stdlib/time"
)

// context implements py.Context for one group. Unlike gpython's own
// context, imports resolve only to the group's listed modules (and the
// registered safe modules): nothing else on the file system can be
// imported.
type context struct {
	store   *py.ModuleStore
	root    string
	modules map[string]string // module name → file relative to root
	// callContext is the context JSON of the call in progress (what
	// toolhost.context() shows; never sent back to the core).
	callContext json.RawMessage
	// callToken is the core's token of the call in progress, attached to
	// its toolhost.call_tool requests.
	callToken string
	// callCtx is the context of the call in progress: its
	// toolhost.call_tool requests end with it (its timeout, its caller
	// gone), even when its code runs on in the background.
	callCtx gocontext.Context
	// callbacks serve toolhost.call_tool.
	callbacks plugins.Callbacks
	// kwPending is the keyword arguments of the call being made by
	// toolhost's call (callOrdered), in their order, until the function
	// called takes them as its **kwargs (kwOrder).
	kwPending py.StringDict
	// loopErr is the error that ended a for loop, until the loop's end
	// raises it (fix_loops.go).
	loopErr error

	closeOnce sync.Once
	running   sync.WaitGroup
	done      chan struct{}
}

func newContext(root string, modules map[string]string) (*context, error) {
	ctx := &context{store: py.NewModuleStore(), root: root, modules: modules, done: make(chan struct{})}
	if err := py.Import(ctx, "builtins", "sys"); err != nil {
		return nil, err
	}
	sys := ctx.store.MustGetModule("sys")
	sys.Globals["argv"] = py.NewList()
	sys.Globals["path"] = py.NewList()
	// gpython's sys.stdin is the plugin process's own stdin (which
	// go-plugin makes the host's): tool code reads nothing there.
	stdin := &py.File{File: emptyInput(), FileMode: py.FileRead}
	sys.Globals["stdin"], sys.Globals["__stdin__"] = stdin, stdin
	// gpython's sys.exit returns a SystemExit instead of raising it, so
	// that a tool calling it went on as if nothing happened.
	sys.Globals["exit"] = py.MustNewMethod("exit", func(_ py.Object, args py.Tuple) (py.Object, error) {
		var code py.Object
		if err := py.UnpackTuple(args, nil, "exit", 0, 1, &code); err != nil {
			return nil, err
		}
		exc, err := py.ExceptionNew(py.SystemExit, args, nil)
		if err != nil {
			return nil, err
		}
		return nil, exc.(*py.Exception)
	}, 0, "exit([status]): raise SystemExit(status)")
	// open() reads and writes any file in gpython; tool code that needs
	// files runs on cpython.
	builtins := ctx.store.MustGetModule("builtins")
	builtins.Globals["open"] = py.MustNewMethod("open", func(py.Object, py.Tuple, py.StringDict) (py.Object, error) {
		return nil, py.ExceptionNewf(py.OSError, "open() is not available on the gpython runtime; run the group on cpython to use files")
	}, 0, "open() is not available on the gpython runtime")
	fixBuiltins(builtins)
	ctx.orderBuiltins(builtins)
	ctx.loopBuiltins(builtins)
	return ctx, nil
}

var (
	emptyOnce sync.Once
	emptyFile *os.File
)

// emptyInput is a pipe whose writing end is closed: reading it gives EOF,
// as /dev/null does (which the sandbox's minimal root may not hold).
func emptyInput() *os.File {
	emptyOnce.Do(func() {
		r, w, err := os.Pipe()
		if err != nil {
			panic("gpython: a pipe for sys.stdin: " + err.Error())
		}
		w.Close()
		emptyFile = r
	})
	return emptyFile
}

// ModuleInit implements py.Context.
func (ctx *context) ModuleInit(impl *py.ModuleImpl) (*py.Module, error) {
	ctx.running.Add(1)
	defer ctx.running.Done()
	if impl.Code == nil && len(impl.CodeSrc) > 0 {
		code, err := compileModule(impl.CodeSrc, impl.Info.FileDesc)
		if err != nil {
			return nil, err
		}
		impl.Code = code
	}
	module, err := ctx.store.NewModule(ctx, impl)
	if err != nil {
		return nil, err
	}
	if impl.Code != nil {
		if _, err := ctx.RunCode(impl.Code, module.Globals, module.Globals, nil); err != nil {
			return nil, err
		}
	}
	return module, nil
}

// ResolveAndCompile implements py.Context: only the group's modules
// resolve.
func (ctx *context) ResolveAndCompile(pathname string, _ py.CompileOpts) (py.CompileOut, error) {
	rel, ok := ctx.modules[pathname]
	if !ok {
		return py.CompileOut{}, missingModule(pathname, func(pkg string) bool {
			for m := range ctx.modules {
				if m == pkg || strings.HasPrefix(m, pkg+"/") {
					return true
				}
			}
			return false
		})
	}
	file := filepath.Join(ctx.root, rel)
	src, err := os.ReadFile(file)
	if err != nil {
		return py.CompileOut{}, py.ExceptionNewf(py.ImportError, "cannot read %s: %v", rel, err)
	}
	code, err := compileModule(string(src), rel)
	if err != nil {
		return py.CompileOut{}, err
	}
	return py.CompileOut{SrcPathname: file, FileDesc: rel, Code: code}, nil
}

// RunCode implements py.Context.
func (ctx *context) RunCode(code *py.Code, globals, locals py.StringDict, closure py.Tuple) (py.Object, error) {
	ctx.running.Add(1)
	defer ctx.running.Done()
	return vm.EvalCode(ctx, code, globals, locals, nil, nil, nil, nil, closure)
}

// GetModule implements py.Context.
func (ctx *context) GetModule(name string) (*py.Module, error) { return ctx.store.GetModule(name) }

// Store implements py.Context.
func (ctx *context) Store() *py.ModuleStore { return ctx.store }

// Close implements py.Context.
func (ctx *context) Close() error {
	ctx.closeOnce.Do(func() {
		ctx.running.Wait()
		ctx.store.OnContextClosed()
		close(ctx.done)
	})
	return nil
}

// Done implements py.Context.
func (ctx *context) Done() <-chan struct{} { return ctx.done }
