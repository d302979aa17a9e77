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
