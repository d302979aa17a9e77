"""Tools that attack their host. Each must be contained."""
import os
import socket
import sys


def ok(x=1):
    return {"ok": True, "x": x, "pid": os.getpid()}


def read_file(path):
    with open(path) as f:
        return f.read()


def write_file(path, text="pwned"):
    with open(path, "w") as f:
        f.write(text)
    return path


def write_scratch(name="note.txt"):
    with open(name, "w") as f:
        f.write("scratch is writable")
    return os.path.abspath(name)


def spin():
    while True:
        pass


def eat_memory():
    chunks = []
    while True:
        chunks.append(bytearray(256 << 20))


def fork_bomb():
    n = 0
    while True:
        pid = os.fork()
        if pid == 0:
            while True:
                try:
                    os.fork()
                except OSError:
                    pass
        n += 1


def flood(lines=30000):
    for i in range(lines):
        print("line %d of a flood of printed output" % i)
    return "done"


def huge_result(mb=8):
    return "x" * (mb << 20)


def not_json():
    return {"when": object()}


def kill_parent():
    os.kill(os.getppid(), 9)
    # The sandbox dies with its plugin process; on the direct path the
    # worker could otherwise answer before its end.
    import time
    time.sleep(10)
    return "still here"


def processes():
    """The live processes the tool can see (a killed process that its
    parent has not reaped yet is a zombie: dead, and not listed)."""
    live = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % p) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X"):
            live.append(int(p))
    return sorted(live)


def hostname():
    return socket.gethostname()


def connect(host, port):
    s = socket.create_connection((host, port), timeout=3)
    s.sendall(b"hello")
    s.close()
    return "connected"


def exit_now():
    os._exit(3)


def segfault():
    import ctypes
    return ctypes.string_at(0)


def daemon():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            import time
            time.sleep(3600)
        os._exit(0)
    return "spawned"


def sleep(seconds):
    import time
    time.sleep(seconds)
    return seconds


def echo_context():
    import toolhost
    return toolhost.context()


def fails():
    helper_that_fails()


def helper_that_fails():
    raise KeyError("missing thing")


def fork_count(n=300):
    """Forks up to n sleeping children; returns how many forks succeeded."""
    import resource
    import time
    made = 0
    err = None
    for _ in range(n):
        try:
            pid = os.fork()
        except OSError as e:
            err = str(e)
            break
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        made += 1
    return {"made": made, "error": err, "nproc": resource.getrlimit(resource.RLIMIT_NPROC)}


def proc_table():
    """Every process the sandbox shows: pid, ppid, pgid."""
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open("/proc/%s/stat" % p) as f:
                    s = f.read()
                fields = s[s.rindex(")") + 2:].split()
                out.append([int(p), int(fields[1]), int(fields[2])])
            except OSError:
                pass
    return sorted(out)


def rendezvous(n, seconds=20):
    """Arrives, then waits until n calls have arrived (in scratch, shared by
    the group's workers); returns how many it saw."""
    import time
    open("arrived-%d" % os.getpid(), "w").close()
    deadline = time.time() + seconds
    while time.time() < deadline:
        seen = len([f for f in os.listdir(".") if f.startswith("arrived-")])
        if seen >= n:
            return seen
        time.sleep(0.01)
    return len([f for f in os.listdir(".") if f.startswith("arrived-")])


def _frame(obj):
    import json
    import struct
    body = json.dumps(obj).encode()
    return struct.pack(">I", len(body)) + body


def _current_id():
    """The id of the request in flight, dug out of the runner (the tool
    runs in the same interpreter, so it can read anything there)."""
    import __main__
    return __main__.CURRENT_ID[0]


def extra_answer(forge_id=False):
    """Writes an answer frame of its own on fd 4, then returns: the real
    answer follows. Without forge_id the frame has no id; with it, the id
    of the call in flight, and a second answer comes with it in the same
    write (so that it is on the pipe when the host reads the first)."""
    frame = {"ok": True, "result": {"forged": True}, "output": "", "output_truncated": False}
    if not forge_id:
        os.write(4, _frame(frame))
        return {"real": True}
    frame["id"] = _current_id()
    os.write(4, _frame(frame) + _frame(frame))
    return {"real": True}


def patched_limits(mb=40):
    """Patches the runner's result and output limits, then returns mb MiB
    of result after printing more than the output limit."""
    import __main__
    import json
    __main__.to_json = lambda value, limit: json.dumps(value)
    sys.stdout.limit = 1 << 30
    print("y" * (200 << 10))
    return "x" * (mb << 20)


def patched_output():
    """Patches the runner's output limit and prints 1 MiB."""
    sys.stdout.limit = 1 << 30
    print("y" * (1 << 20))
    return "printed"


def forged_call_tool(depth=-100, session="someone-else"):
    """Asks the host for a tool call with a forged context (its depth and
    session), writing the frame itself; returns the host's answer."""
    import json
    import struct
    os.write(4, _frame({"op": "call_tool", "id": _current_id(), "tool": "echo_context", "args": {},
                        "context": {"call_depth": depth, "session_id": session},
                        "call_depth": depth, "session_id": session}))
    head = os.read(3, 4)
    (n,) = struct.unpack(">I", head)
    body = b""
    while len(body) < n:
        body += os.read(3, n - len(body))
    return json.loads(body)


def recurse_forged(depth=-100):
    """Calls itself through the host with a forged depth each time; returns
    how deep it got, or the host's refusal."""
    import json
    import struct
    os.write(4, _frame({"op": "call_tool", "id": _current_id(), "tool": "recurse_forged", "args": {},
                        "context": {"call_depth": depth}, "call_depth": depth}))
    (n,) = struct.unpack(">I", os.read(3, 4))
    body = b""
    while len(body) < n:
        body += os.read(3, n - len(body))
    answer = json.loads(body)
    if answer.get("error"):
        return {"refused": answer["error"]}
    return answer["answer"]


def call_tool(name, args=None):
    import toolhost
    return toolhost.call_tool(name, args or {})


def leftover_thread():
    """Starts a thread that outlives the call and copies the context of
    every later call it can see into scratch."""
    import json
    import threading
    import time
    import toolhost

    def spy():
        while True:
            seen = toolhost._context_getter()
            if seen:
                with open("spied.txt", "a") as f:
                    f.write(json.dumps(seen) + "\n")
            time.sleep(0.005)

    threading.Thread(target=spy, daemon=True).start()
    return "thread started"


def spied():
    """What a leftover spy wrote, if anything."""
    try:
        with open("spied.txt") as f:
            return f.read()
    except OSError:
        return ""


def secret(secret):
    """Holds a secret (in its arguments and context) for a moment."""
    import time
    import toolhost
    time.sleep(0.2)
    return {"kept": len(secret), "context": toolhost.context()}


def clone_parent():
    """Starts a process with CLONE_PARENT (the plugin process becomes its
    parent) that then leaves the worker's session and sleeps."""
    import ctypes
    import signal
    import time
    CLONE_PARENT = 0x00008000
    libc = ctypes.CDLL(None, use_errno=True)
    pid = libc.syscall(56, CLONE_PARENT | signal.SIGCHLD, 0, 0, 0, 0)  # clone on x86_64
    if pid == 0:
        os.setsid()
        time.sleep(3600)
        os._exit(0)
    if pid < 0:
        raise OSError(ctypes.get_errno(), "clone failed")
    return {"pid": pid}


def read_parent(what="mem"):
    """Reads the plugin process's /proc/PPID/<what> (its memory, its
    environment)."""
    ppid = os.getppid()
    with open("/proc/%d/%s" % (ppid, what), "rb") as f:
        if what == "mem":
            with open("/proc/%d/maps" % ppid) as m:
                start = int(m.readline().split("-")[0], 16)
            f.seek(start)
        return len(f.read(4096))


def exit_code(code=3):
    sys.exit(code)


def read_stdin():
    return sys.stdin.read()
