package gpython

import (
	gocontext "context"
	"encoding/json"
	"strings"
	"time"

	"github.com/go-python/gpython/py"

	"toolhost/plugins"
	"toolhost/pyhost/cpython"
)

// The modules the host provides to gpython code: json (gpython has none)
// and toolhost (the call's context).
func init() {
	// gpython readies its own types at start-up; a type made after that
	// must be readied itself (else it is nobody's subclass), and NewType
	// copied the ready flag of its base.
	for _, t := range []*py.Type{jsonDecodeError, moduleNotFoundError} {
		t.Flags &^= py.TPFLAGS_READY | py.TPFLAGS_READYING
		if err := t.Ready(); err != nil {
			panic("gpython: " + t.Name + ": " + err.Error())
		}
	}
	py.RegisterModule(&py.ModuleImpl{
		Info: py.ModuleInfo{Name: "json", Doc: "JSON encoding and decoding, provided by toolhost."},
		Methods: []*py.Method{
			py.MustNewMethod("dumps", pyJSONDumps, 0, "dumps(obj, indent=None, separators=None, sort_keys=False, ensure_ascii=True, allow_nan=True) -> str: serialise dicts, lists, str, numbers, bools and None as CPython's json does."),
			py.MustNewMethod("loads", jsonLoads, 0, "loads(s) -> object: parse a JSON document."),
		},
		Globals: py.StringDict{"JSONDecodeError": jsonDecodeError},
	})
	py.RegisterModule(&py.ModuleImpl{
		Info:    py.ModuleInfo{Name: "toolhost", Doc: "What tool code can ask its host.", FileDesc: "<toolhost>"},
		CodeSrc: cpython.BlockHelpers(),
		Methods: []*py.Method{
			py.MustNewMethod("context", toolhostContext, 0, "context() -> dict: the context of the call in progress."),
			py.MustNewMethod("session_id", toolhostSessionID, 0, "session_id() -> str or None."),
			py.MustNewMethod("variables", toolhostVariables, 0, "variables() -> dict: the session's variables."),
			py.MustNewMethod("secret", toolhostSecret, 0, "secret(name) -> str: a tenant secret the group declares (its secrets: key)."),
			py.MustNewMethod("agent", toolhostField("agent"), 0, "agent() -> str or None: the session's agent."),
			py.MustNewMethod("state", toolhostField("state"), 0, "state() -> str or None: the session's workflow state."),
			py.MustNewMethod("call_tool", toolhostCallTool, 0, "call_tool(name, args=None, idempotency_key=None, group=None) -> dict: call another tool through the host."),
		},
		Globals: py.StringDict{},
	})
}

// jsonDecodeError is json.JSONDecodeError, a ValueError as on CPython.
var jsonDecodeError = py.ValueError.NewType("JSONDecodeError", "The JSON document could not be read.", nil, nil)

func jsonDumps(self py.Object, args py.Tuple) (py.Object, error) {
	var obj py.Object
	if err := py.ParseTuple(args, "O:dumps", &obj); err != nil {
		return nil, err
	}
	b, err := toJSON(obj)
	if err != nil {
		return nil, py.ExceptionNewf(py.TypeError, "%s", strings.Replace(err.Error(), "the result is", "the value is", 1))
	}
	return py.String(b), nil
}

func jsonLoads(self py.Object, args py.Tuple) (py.Object, error) {
	var s py.Object
	if err := py.ParseTuple(args, "s:loads", &s); err != nil {
		return nil, err
	}
	o, err := fromJSON([]byte(string(s.(py.String))))
	if err != nil {
		if fixesOff {
			return nil, py.ExceptionNewf(py.ValueError, "invalid JSON: %v", err)
		}
		// Its doc is CPython's (the document); msg, pos, lineno and colno
		// raise NotImplementedError (exceptionAttrs): CPython's name its
		// own parser's place of the error.
		e := py.ExceptionNewf(jsonDecodeError, "invalid JSON: %v", err)
		e.Dict["doc"] = s
		return nil, e
	}
	return o, nil
}

// callContext returns the context JSON of the call running in the module's
// interpreter.
func callContext(self py.Object) (map[string]any, error) {
	mod, ok := self.(*py.Module)
	if !ok {
		return nil, nil
	}
	c, ok := mod.Context.(*context)
	if !ok || len(c.callContext) == 0 {
		return nil, nil
	}
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(string(c.callContext)))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, nil
	}
	return m, nil
}

func toolhostContext(self py.Object, args py.Tuple) (py.Object, error) {
	m, _ := callContext(self)
	if m == nil {
		return py.NewStringDict(), nil
	}
	delete(m, "secrets")
	return toPy(m)
}

// toolhostSecret answers a secret of the call's context: PermissionError
// for a name the group does not declare, LookupError for one not set (as
// the CPython helper does).
func toolhostSecret(self py.Object, args py.Tuple) (py.Object, error) {
	var name py.Object
	if err := py.ParseTuple(args, "s:secret", &name); err != nil {
		return nil, err
	}
	n := string(name.(py.String))
	m, _ := callContext(self)
	secrets, _ := m["secrets"].(map[string]any)
	v, declared := secrets[n]
	if !declared {
		return nil, py.ExceptionNewf(py.PermissionError, "secret '%s' is not declared by this tool's group: list it under the group's secrets: key", n)
	}
	s, ok := v.(string)
	if !ok {
		return nil, py.ExceptionNewf(py.LookupError, "secret '%s' is declared but the tenant has not set it (PUT /v1/secrets/%s, or toolhost tenant secret set)", n, n)
	}
	return py.String(s), nil
}

func toolhostSessionID(self py.Object, args py.Tuple) (py.Object, error) {
	return toolhostField("session_id")(self, args)
}

// toolhostField returns a method that answers one string of the context,
// or None.
func toolhostField(key string) func(py.Object, py.Tuple) (py.Object, error) {
	return func(self py.Object, _ py.Tuple) (py.Object, error) {
		m, _ := callContext(self)
		if s, ok := m[key].(string); ok {
			return py.String(s), nil
		}
		return py.None, nil
	}
}

func toolhostVariables(self py.Object, args py.Tuple) (py.Object, error) {
	m, _ := callContext(self)
	if v, ok := m["variables"].(map[string]any); ok {
		return toPy(v)
	}
	return py.NewStringDict(), nil
}

func toolhostCallTool(self py.Object, args py.Tuple, kwargs py.StringDict) (py.Object, error) {
	var name, a, key, group py.Object = nil, py.None, py.None, py.None
	if err := py.ParseTupleAndKeywords(args, kwargs, "s|OOO:call_tool", []string{"name", "args", "idempotency_key", "group"}, &name, &a, &key, &group); err != nil {
		return nil, err
	}
	mod, ok := self.(*py.Module)
	if !ok {
		return nil, py.ExceptionNewf(py.RuntimeError, "toolhost.call_tool is not available here")
	}
	c, ok := mod.Context.(*context)
	if !ok || c.callbacks == nil {
		return nil, py.ExceptionNewf(py.RuntimeError, "toolhost.call_tool is not available here")
	}
	argJSON := []byte("{}")
	if a != py.None {
		b, err := toJSON(a)
		if err != nil {
			return nil, py.ExceptionNewf(py.TypeError, "call_tool args: %v", err)
		}
		argJSON = b
	}
	k, g := "", ""
	if s, ok := key.(py.String); ok {
		k = string(s)
	}
	if s, ok := group.(py.String); ok {
		g = string(s)
	}
	parent := c.callCtx
	if parent == nil {
		parent = gocontext.Background()
	}
	ctx, cancel := gocontext.WithTimeout(parent, 5*time.Minute)
	defer cancel()
	resp, err := c.callbacks.CallTool(ctx, &plugins.ToolCallRequest{Tool: string(name.(py.String)), Args: argJSON, IdempotencyKey: k, Group: g, Token: c.callToken})
	if err != nil {
		return nil, py.ExceptionNewf(py.RuntimeError, "toolhost.call_tool(%q): %v", string(name.(py.String)), err)
	}
	if resp.Error != "" {
		return nil, py.ExceptionNewf(py.RuntimeError, "toolhost.call_tool(%q): %s", string(name.(py.String)), resp.Error)
	}
	return fromJSON(resp.Answer)
}

// cpythonStdlib are the top-level modules of CPython's standard library
// (Python 3.11's sys.stdlib_module_names, without the private ones): a
// missing one of these is a module CPython has and gpython lacks, whose
// ImportError says to run the group on cpython; any other missing module
// is missing on CPython too, where its error is ModuleNotFoundError.
var cpythonStdlib = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range strings.Fields(`
abc aifc antigravity argparse array ast asynchat asyncio asyncore atexit
audioop base64 bdb binascii bisect builtins bz2 cProfile calendar cgi
cgitb chunk cmath cmd code codecs codeop collections colorsys compileall
concurrent configparser contextlib contextvars copy copyreg crypt csv
ctypes curses dataclasses datetime dbm decimal difflib dis distutils
doctest email encodings ensurepip enum errno faulthandler fcntl filecmp
fileinput fnmatch fractions ftplib functools gc genericpath getopt
getpass gettext glob graphlib grp gzip hashlib heapq hmac html http
idlelib imaplib imghdr imp importlib inspect io ipaddress itertools json
keyword lib2to3 linecache locale logging lzma mailbox mailcap marshal
math mimetypes mmap modulefinder msilib msvcrt multiprocessing netrc nis
nntplib nt ntpath nturl2path numbers opcode operator optparse os
ossaudiodev pathlib pdb pickle pickletools pipes pkgutil platform
plistlib poplib posix posixpath pprint profile pstats pty pwd py_compile
pyclbr pydoc pydoc_data pyexpat queue quopri random re readline reprlib
resource rlcompleter runpy sched secrets select selectors shelve shlex
shutil signal site smtpd smtplib sndhdr socket socketserver spwd sqlite3
sre_compile sre_constants sre_parse ssl stat statistics string
stringprep struct subprocess sunau symtable sys sysconfig syslog
tabnanny tarfile telnetlib tempfile termios textwrap this threading time
timeit tkinter token tokenize tomllib trace traceback tracemalloc tty
turtle turtledemo types typing unicodedata unittest urllib uu uuid venv
warnings wave weakref webbrowser winreg winsound wsgiref xdrlib xml
xmlrpc zipapp zipfile zipimport zlib zoneinfo`) {
		m[n] = true
	}
	return m
}()

// moduleNotFoundError is ModuleNotFoundError, an ImportError, which
// gpython lacks (a missing module raised ImportError).
var moduleNotFoundError = py.ImportError.NewType("ModuleNotFoundError", "Module not found.", nil, nil)

// missingModule is the error of importing a module the group does not
// have: ModuleNotFoundError with CPython's message for a module CPython's
// standard library does not have either; for one it has, ImportError
// saying that gpython lacks it.
// The name CPython's message gives is the first part of a dotted name
// that is missing: the package, unless the group has it (have).
func missingModule(name string, have func(string) bool) error {
	dotted := strings.ReplaceAll(name, "/", ".")
	top, _, _ := strings.Cut(dotted, ".")
	if fixesOff || cpythonStdlib[top] {
		return py.ExceptionNewf(py.ImportError, "No module named %q on the gpython runtime (it has only a small part of the standard library: math, string, time, binascii, json, toolhost); run the group on cpython", name)
	}
	if !have(top) {
		dotted = top
	}
	e := py.ExceptionNewf(moduleNotFoundError, "No module named '%s'", dotted)
	e.Dict["name"] = py.String(dotted)
	return e
}
