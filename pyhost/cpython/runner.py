# The CPython worker of toolhost's plugin process. It is started as
# "python3 -I -S -B -c <this file>" and speaks framed JSON (a 4-byte big-endian
# length, then UTF-8 JSON) on two dedicated pipes: requests on fd 3, answers
# on fd 4. Standard output and error are never part of the protocol, so
# print() in tool code cannot corrupt it: during a call they go to a bounded
# buffer that is returned with the answer. Every request carries an "id";
# every frame written back (the answer, and toolhost.call_tool requests
# made during the call) carries the id of the request in flight. The host
# checks ids and sizes itself: this file cooperates, it is not trusted.
import site
import sys


def _site_packages():
    """Sets up the import path that python3 -S left out.

    The worker is started without the site module's start-up work: the .pth
    files and sitecustomize of the interpreter's own site-packages are the
    host's start-up hooks, not part of a group's environment (and can cost
    more than the rest of the start). A venv (the group's requirements) is
    set up as site would: its prefix, its site-packages and the .pth files
    of the packages the group installed. Without a venv, the interpreter's
    site-packages is importable but its .pth files do not run. The builtins
    site adds (exit, quit, help, ...) are added too.
    """
    site.venv(None)
    for d in site.getsitepackages():
        if sys.prefix != sys.base_prefix:
            site.addsitedir(d)
        elif d not in sys.path:
            sys.path.append(d)
    site.setquit()
    site.setcopyright()
    site.sethelper()


_site_packages()

import io  # noqa: E402 (after the import path is set)
import os
import resource
import time

# The types the runner checks and makes, without importing the struct and
# types modules (each costs a worker's start a module to find and load).
FunctionType = type(_site_packages)
CodeType = type(_site_packages.__code__)
ModuleType = type(sys)

try:
    # JSON straight from the json module's C accelerator: the json module
    # itself imports re (and enum, and more), a third of a worker's start.
    # Same output as json.dumps(..., ensure_ascii=False, allow_nan=False),
    # same parsing as json.loads.
    import _json

    class _ScanContext:
        strict = True
        object_hook = None
        object_pairs_hook = None
        parse_float = float
        parse_int = int

        @staticmethod
        def parse_constant(name):
            raise ValueError("%s is not valid JSON" % name)

    _scan = _json.make_scanner(_ScanContext())
    _WHITESPACE = " \t\n\r"

    def json_loads(data):
        text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
        start = len(text) - len(text.lstrip(_WHITESPACE))
        try:
            obj, end = _scan(text, start)
        except StopIteration as e:
            raise ValueError("invalid JSON at character %d" % e.value) from None
        if text[end:].strip(_WHITESPACE):
            raise ValueError("invalid JSON: extra data at character %d" % end)
        return obj

    def _not_serialisable(o):
        raise TypeError("Object of type %s is not JSON serializable" % type(o).__name__)

    # One encoder per default function, made once and reused: making one
    # costs more than encoding a small answer. An encoder is taken out
    # while it encodes (a nested call makes its own) and put back only
    # after a success: one that raised may keep the ids of the containers
    # it was in (its circular-reference markers), and is dropped.
    _encoders = {}

    def json_dumps(obj, default=None):
        default = default or _not_serialisable
        encode = _encoders.pop(default, None)
        if encode is None:
            encode = _json.make_encoder({}, default, _json.encode_basestring, None, ": ", ", ", False, False, False)
        text = "".join(encode(obj, 0))
        if len(_encoders) < 4:
            _encoders[default] = encode
        return text

    json_dumps(json_loads('{"check": [1, 2.5, "\\u00e9", null, true]}'))
except (ImportError, AttributeError, TypeError, ValueError):  # pragma: no cover (not CPython)
    import json

    def json_loads(data):
        return json.loads(data)

    def json_dumps(obj, default=None):
        return json.dumps(obj, default=default, ensure_ascii=False, allow_nan=False)


try:
    # What importlib.util re-exports, without the import of importlib.util
    # (contextlib and more: a few milliseconds of every worker's start).
    from _frozen_importlib import module_from_spec
    from _frozen_importlib_external import spec_from_file_location
except ImportError:  # pragma: no cover (not CPython)
    from importlib.util import module_from_spec, spec_from_file_location

# The protocol pipes are not passed on to programs tool code runs.
os.set_inheritable(3, False)
os.set_inheritable(4, False)
REQ = os.fdopen(3, "rb", buffering=0)
RESP = os.fdopen(4, "wb", buffering=0)
ROOT = [""]  # the group's folder, cut from file names in tracebacks
BASE_PATH = list(sys.path)  # the import path before the group's folders
GROUP_MODULES = set()  # the names of the group's modules


def stdlib(name):
    """Imports a standard module the runner needs late (inspect, traceback),
    as if the group's folders were not on the path: a group's token.py or
    enum.py must not stand in for the modules these import."""
    mod = sys.modules.get(name)
    if mod is not None and name not in GROUP_MODULES:
        return mod
    saved_path = sys.path[:]
    shadowing = {n: sys.modules.pop(n) for n in list(GROUP_MODULES) if n in sys.modules}
    sys.path[:] = BASE_PATH
    try:
        __import__(name)
        return sys.modules[name]
    finally:
        sys.path[:] = saved_path
        sys.modules.update(shadowing)
MEMORY_LIMIT = [0]  # the worker's address space, for MemoryError messages
RUNNER_FILE = "<string>"  # the file name python3 -c gives the runner's frames


_INBUF = bytearray()  # bytes read from fd 3 past the frame being read


def read_frame():
    """Reads one frame from fd 3, in one read(2) when it fits in the first
    4 KiB (a call's request usually does): the length and the body come
    in one system call."""
    buf = _INBUF
    while len(buf) < 4:
        chunk = REQ.read(4096)
        if not chunk:
            return None
        buf += chunk
    n = int.from_bytes(buf[:4], "big")
    end = 4 + n
    while len(buf) < end:
        chunk = REQ.read(max(4096, end - len(buf)))
        if not chunk:
            return None
        buf += chunk
    body = buf[4:end]
    del buf[:end]
    return json_loads(body)


ERROR_TEXT = 65536  # characters kept of an exception's message and traceback
CURRENT_ID = [None]  # the id of the request in flight


def write_frame(obj, raw_result=None):
    """Writes one answer, with the id of the request in flight; raw_result,
    already JSON, is spliced in as the "result" member rather than encoded a
    second time."""
    obj["id"] = CURRENT_ID[0]
    body = json_dumps(obj)
    if raw_result is not None:
        body = '{"result":' + raw_result + "," + body[1:]
    body = body.encode("utf-8")
    RESP.write(len(body).to_bytes(4, "big") + body)


class BoundedOutput(io.TextIOBase):
    """A text stream that keeps the first `limit` characters written."""

    def __init__(self, limit):
        self.limit = limit
        self.parts = []
        self.size = 0
        self.truncated = False

    def writable(self):
        return True

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not %s" % type(s).__name__)
        room = self.limit - self.size
        if room > 0:
            self.parts.append(s[:room])
            self.size += min(len(s), room)
        if len(s) > room:
            self.truncated = True
        return len(s)

    def getvalue(self):
        return "".join(self.parts)


def error_of(exc, kind="exception"):
    """The {"kind","type","message","traceback"} of an exception, with the
    runner's own frames left out so that the user's file and lines show."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == RUNNER_FILE:
        tb = tb.tb_next
    try:
        traceback = stdlib("traceback")  # imported ahead after a worker's first call (see warm_up)
        text = "".join(traceback.format_exception(type(exc), exc, tb))
    except BaseException:  # out of memory, say: the message alone
        text = "%s: %s\n" % (type(exc).__name__, exc)
    if ROOT[0]:
        text = text.replace('File "' + ROOT[0] + os.sep, 'File "')
    message = str(exc)
    if isinstance(exc, SystemExit):
        code = "" if exc.code is None else repr(exc.code)
        message = "the tool called sys.exit(%s); a tool must return a result or raise an exception" % code
    if isinstance(exc, MemoryError) and not message:
        # Python's MemoryError says nothing; say which limit it hit.
        limit = MEMORY_LIMIT[0]
        message = "out of memory: a worker may use %d MiB (--memory-mb)" % (limit >> 20) if limit else "out of memory"
    out = {
        "kind": kind,
        "type": type(exc).__name__,
        "message": message[:ERROR_TEXT],
        "traceback": text[-ERROR_TEXT:],
    }
    status, body = http_error_of(exc)
    if status:
        out["status"] = status
    if body:
        out["body"] = body[:ERROR_TEXT]
    return out


def http_error_of(exc):
    """The HTTP status and error body an exception carries, as HTTP client
    libraries raise them: status or status_code on the exception or on its
    response (requests, httpx, urllib's HTTPError), body on the exception
    or text on its response. (0, "") when it carries none; an attribute
    that fails to read counts as absent."""
    def attr(obj, name):
        try:
            return getattr(obj, name, None)
        except BaseException:
            return None
    status, body = 0, ""
    response = attr(exc, "response")
    for obj in (exc, response):
        if obj is None or status:
            continue
        for name in ("status", "status_code"):
            v = attr(obj, name)
            if isinstance(v, int) and not isinstance(v, bool) and 100 <= v <= 599:
                status = v
                break
    for obj, name in ((exc, "body"), (response, "text")):
        if obj is None:
            continue
        v = attr(obj, name)
        if isinstance(v, (bytes, bytearray)):
            v = bytes(v).decode("utf-8", "replace")
        elif isinstance(v, (dict, list)):
            try:
                v = json_dumps(v)
            except BaseException:
                v = None
        if isinstance(v, str) and v:
            body = v
            break
    return status, body


def apply_limits(limits):
    def setlimit(which, value):
        if value and value > 0:
            try:
                resource.setrlimit(which, (value, value))
            except (ValueError, OSError):
                pass

    setlimit(resource.RLIMIT_AS, limits.get("memory_bytes"))
    MEMORY_LIMIT[0] = limits.get("memory_bytes") or 0
    setlimit(resource.RLIMIT_NOFILE, limits.get("open_files"))
    setlimit(resource.RLIMIT_FSIZE, limits.get("file_size_bytes"))
    # The process limit counts every process and thread of the sandbox;
    # workers get less of it than the whole, so that a fork bomb leaves room
    # for the plugin process's own threads.
    nproc = limits.get("processes")
    if nproc:
        setlimit(resource.RLIMIT_NPROC, max(8, nproc - 48))
    cpu = limits.get("cpu_seconds")
    if cpu:
        # The hard limit bounds the worker's whole life; each call lowers the
        # soft limit to what it has used plus one call's worth.
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu * 60))


def cpu_used():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


_armed = [0.0, 0.0, -1.0]  # the soft CPU limit last set; the CPU used and the time when last read
_CPUS = os.cpu_count() or 1  # no process runs on more CPUs at once than the machine has


def arm_cpu(limits):
    """Gives the coming call at least its CPU seconds: the soft limit is
    moved (a system call) only when less than that is left before it. The
    CPU used is read (getrusage, a system call) only when it may have
    grown that far: it grows at most by the time gone by (a clock read
    without a system call) times the machine's CPUs."""
    cpu = limits.get("cpu_seconds")
    if not cpu:
        return
    now = time.monotonic()
    limit, used, then = _armed
    if then >= 0 and limit - used - (now - then) * _CPUS >= cpu:
        return
    used = cpu_used()
    _armed[1], _armed[2] = used, now
    if limit - used >= cpu:
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    want = int(used) + 2 * cpu + 1
    if hard != resource.RLIM_INFINITY:
        want = min(want, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (want, hard))
    _armed[0] = want


def _refuse(o):
    """The default of a result's encoding: dates and times as ISO text,
    anything else not JSON an error naming its type (one function for
    every call: json_dumps keeps one encoder per default)."""
    dt = sys.modules.get("datetime")
    if dt is not None and isinstance(o, (dt.date, dt.time)):
        return o.isoformat()  # a datetime is a date too
    raise TypeError(
        "the result is not JSON-serialisable: a value of type %s (return dicts, "
        "lists, str, numbers, bools or None)" % type(o).__name__
    )


def to_json(value, limit):
    """Serialises a result; anything but dicts, lists, tuples, str, numbers,
    bools and None is an error naming the type."""

    try:
        text = json_dumps(value, default=_refuse)
    except ValueError as e:
        raise TypeError("the result is not JSON-serialisable: %s" % e)
    size = len(text) if text.isascii() else len(text.encode("utf-8"))
    if size > limit:
        raise OverflowError("the result is %d bytes of JSON, more than the limit of %d" % (size, limit))
    return text


def convert(value, plan, where):
    """Turns the ISO strings of a date-holding argument into datetime.date
    and datetime.datetime objects, as the plan the host made from the
    parameter's type says; other values are left as they are."""
    if plan in ("date", "datetime", "time"):
        if not isinstance(value, str):
            return value
        import datetime

        text = value
        if plan != "date" and text[-1:] in ("Z", "z"):
            text = text[:-1] + "+00:00"  # before Python 3.11, fromisoformat takes no Z
        try:
            if plan == "date":
                return datetime.date.fromisoformat(text)
            if plan == "time":
                return datetime.time.fromisoformat(text)
            return datetime.datetime.fromisoformat(text)
        except ValueError as e:
            raise ValueError("argument %s: this Python cannot read %r as a %s (%s)" % (where, value, plan, e)) from None
    if isinstance(plan, dict):
        if "list" in plan and isinstance(value, list):
            return [convert(x, plan["list"], "%s[%d]" % (where, i)) for i, x in enumerate(value)]
        if "dict" in plan and isinstance(value, dict):
            return {k: convert(x, plan["dict"], "%s[%r]" % (where, k)) for k, x in value.items()}
    return value


CO_VARARGS, CO_VARKEYWORDS = 0x04, 0x08


def source_of(fn):
    """The file (relative to the group's folder) and line where a function is
    defined, following functools.wraps to the wrapped one; None when it is
    not a Python function of the group."""
    seen = 0
    while getattr(fn, "__wrapped__", None) is not None and seen < 100:
        fn, seen = fn.__wrapped__, seen + 1
    code = getattr(fn, "__code__", None)
    if type(code) is not CodeType:
        return None
    path = code.co_filename
    root = ROOT[0] + os.sep
    if not path.startswith(root):
        return None
    return path[len(root):], code.co_firstlineno


def parameters_of(fn):
    """The parameters of a callable as inspect.signature gives them: name,
    kind and whether it has a default. A plain function is read from its
    code object (inspect costs more to import than the rest of the worker:
    ast, dis, tokenize, enum); anything else (a class, a partial, a
    decorated function with __wrapped__ or __signature__, a builtin) goes
    through inspect."""
    code = getattr(fn, "__code__", None)
    if (
        type(fn) is not FunctionType
        or type(code) is not CodeType
        or "__wrapped__" in fn.__dict__
        or "__signature__" in fn.__dict__
    ):
        inspect = stdlib("inspect")
        return [
            {"name": p.name, "kind": p.kind.name, "has_default": p.default is not inspect.Parameter.empty}
            for p in inspect.signature(fn).parameters.values()
        ]
    names = code.co_varnames
    npos, nposonly, nkw = code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount
    ndefaults = len(fn.__defaults__ or ())
    kwdefaults = fn.__kwdefaults__ or {}
    out = []
    for i in range(npos):
        kind = "POSITIONAL_ONLY" if i < nposonly else "POSITIONAL_OR_KEYWORD"
        out.append({"name": names[i], "kind": kind, "has_default": i >= npos - ndefaults})
    at = npos + nkw
    if code.co_flags & CO_VARARGS:
        out.append({"name": names[at], "kind": "VAR_POSITIONAL", "has_default": False})
        at += 1
    for name in names[npos : npos + nkw]:
        out.append({"name": name, "kind": "KEYWORD_ONLY", "has_default": name in kwdefaults})
    if code.co_flags & CO_VARKEYWORDS:
        out.append({"name": names[at], "kind": "VAR_KEYWORD", "has_default": False})
    return out


class Worker:
    def __init__(self, init):
        self.root = init["root"]
        self.pid = os.getpid()
        ROOT[0] = self.root
        self.modules = init.get("modules") or {}
        GROUP_MODULES.update(self.modules)
        self.limits = init.get("limits") or {}
        self.loaded = {}
        self.import_errors = {}
        self.context = None
        self.install_helper(init.get("helper", ""))
        paths = []
        for rel in self.modules.values():
            d = os.path.dirname(os.path.join(self.root, rel))
            if d not in paths:
                paths.append(d)
        sys.path[:0] = paths
        scratch = init.get("scratch")
        if scratch:
            os.chdir(scratch)
            os.environ["TMPDIR"] = scratch
            os.environ["HOME"] = scratch

    def install_helper(self, source):
        mod = ModuleType("toolhost")
        mod.__file__ = "<toolhost>"
        code = PREPARED[1] if source == PREPARED[0] else compile(source, "<toolhost>", "exec")
        exec(code, mod.__dict__)
        mod._context_getter = lambda: self.context
        mod._call_tool_hook = self.call_tool
        sys.modules["toolhost"] = mod

    def call_tool(self, name, args, key, group=None):
        """Asks the host to call another tool during this call."""
        if os.getpid() != self.pid:
            raise RuntimeError("toolhost.call_tool works only in the worker itself")
        # The host knows which call this is and in which session; nothing
        # about it is sent.
        write_frame({"op": "call_tool", "tool": name, "args": args or {}, "idempotency_key": key or "", "group": group or ""})
        answer = read_frame()
        if answer is None:
            raise RuntimeError("the host went away during toolhost.call_tool")
        if answer.get("error"):
            raise RuntimeError("toolhost.call_tool(%r): %s" % (name, answer["error"]))
        return answer.get("answer")

    def module(self, name):
        if name in self.loaded:
            return self.loaded[name]
        if name in self.import_errors:
            raise self.import_errors[name]
        rel = self.modules.get(name)
        if rel is None:
            raise ImportError("module %r is not a listed dependency of the group" % name)
        path = os.path.join(self.root, rel)
        spec = spec_from_file_location(name, path)
        mod = module_from_spec(spec)
        sys.modules[name] = mod
        try:
            spec.loader.exec_module(mod)
        except BaseException as e:
            del sys.modules[name]
            self.import_errors[name] = e
            raise
        self.loaded[name] = mod
        return mod

    def describe(self, callables):
        out = []
        for c in callables:
            item = {"module": c["module"], "func": c["func"]}
            try:
                fn = getattr(self.module(c["module"]), c["func"], None)
                if fn is None:
                    raise AttributeError("module %r has no attribute %r" % (c["module"], c["func"]))
                if not callable(fn):
                    raise TypeError("%s.%s is a %s, not a function" % (c["module"], c["func"], type(fn).__name__))
                item["params"] = parameters_of(fn)
                where = source_of(fn)
                if where:
                    item["file"], item["line"] = where
            except BaseException as e:
                item["error"] = error_of(e, "load")
            out.append(item)
        return {"signatures": out}

    def call(self, req):
        out = BoundedOutput(self.limits.get("output_bytes") or 65536)
        self.context = req.get("context")
        old = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = out
        start = time.perf_counter()
        answer = {}
        raw = None
        try:
            arm_cpu(self.limits)
            fn = getattr(self.module(req["module"]), req["func"])
            args = req.get("args") or {}
            for name, plan in (req.get("convert") or {}).items():
                if name in args:
                    args[name] = convert(args[name], plan, name)
            result = fn(**args)
        except BaseException as e:
            answer = {"ok": False, "error": error_of(e)}
        else:
            try:
                answer = {"ok": True}
                raw = to_json(result, self.limits.get("result_bytes") or (1 << 20))
            except BaseException as e:
                answer = {"ok": False, "error": {"kind": "result", "type": type(e).__name__, "message": str(e)}}
        finally:
            sys.stdout, sys.stderr = old
            self.context = None
        answer["duration_us"] = int((time.perf_counter() - start) * 1e6)
        answer["output"] = out.getvalue()
        answer["output_truncated"] = out.truncated
        return answer, raw


_forked = [False]  # set once tool code has forked


def reap():
    """Collects children that earlier calls left (the host kills them after
    each call), so that they do not stay as zombies."""
    if not _forked[0]:
        return
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def warm_up():
    """Imports, once the host has a call's answer, what error reports need
    (traceback is not needed to start a worker: it is imported out of the
    way of a cold start)."""
    try:
        stdlib("traceback")
    except BaseException:
        pass


def _close_quietly(fd):
    try:
        os.close(fd)
    except OSError:
        pass


def _not_dumpable():
    """Makes the worker non-dumpable before any tool code runs: the workers
    of a group (serving other sessions at the same time) run as the same
    user, and /proc/PID/mem asks only the ptrace access check, which a
    dumpable process of the same user passes. The sandbox's seccomp filter
    lets no process make itself dumpable again. _ctypes alone, without the
    ctypes package, costs well under a millisecond."""
    try:
        import _ctypes

        _ctypes.call_function(_ctypes.dlsym(_ctypes.dlopen(None), "prctl"), (4, 0, 0, 0, 0))  # PR_SET_DUMPABLE
    except (ImportError, AttributeError, OSError):  # pragma: no cover (not CPython)
        pass


PREPARED = [None, None]  # the toolhost module's source and code, compiled by a prepare frame


def prepare(frame):
    """Answers a prepare frame, which a worker started ahead of its group
    (a spare sandbox's) gets before the group's first frame: it compiles
    the toolhost module's source, the same for every group, and says the
    worker is set up. Nothing of any group is read or imported."""
    source = frame.get("helper") or ""
    PREPARED[0], PREPARED[1] = source, compile(source, "<toolhost>", "exec")
    write_frame({"ready": True, "pid": os.getpid()})


def main():
    _not_dumpable()
    main_pid = os.getpid()
    # A process forked by tool code must never speak the protocol: it
    # inherits the pipes, so it loses them, and it ends where the worker
    # would answer.
    os.register_at_fork(
        after_in_child=lambda: (_close_quietly(3), _close_quietly(4)),
        after_in_parent=lambda: _forked.__setitem__(0, True),
    )
    init = read_frame()
    if init is not None and init.get("op") == "prepare":
        CURRENT_ID[0] = init.get("id")
        prepare(init)
        init = read_frame()
    if init is None:
        return
    CURRENT_ID[0] = init.get("id")
    apply_limits(init.get("limits") or {})
    worker = Worker(init)
    # Import every module now, so that warm calls do not pay for it; errors
    # are kept and reported by describe and call.
    for name in worker.modules:
        try:
            worker.module(name)
        except BaseException:
            pass
    write_frame({"ready": True, "pid": os.getpid()})
    while True:
        req = read_frame()
        if req is None:
            return
        reap()
        CURRENT_ID[0] = req.get("id")
        op = req.get("op")
        if op == "call":
            answer, raw = worker.call(req)
            if os.getpid() != main_pid:
                os._exit(0)
            write_frame(answer, raw)
            warm_up()
        elif op == "describe":
            write_frame(worker.describe(req.get("callables") or []))
        elif op == "exit":
            return
        else:
            write_frame({"ok": False, "error": {"kind": "runtime", "message": "unknown op %r" % op}})


main()
