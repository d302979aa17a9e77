"""Normal and hostile tools for the soak run and the kill -9 test: each
hostile one must be contained, and nothing it starts may outlive it."""
import os
import sys


def ok(x=1):
    return {"ok": True, "x": x}


def fails():
    raise KeyError("missing thing")


def exit_now():
    os._exit(3)


def segfault():
    import ctypes
    return ctypes.string_at(0)


def kill_parent():
    os.kill(os.getppid(), 9)
    return "still here"


def spin():
    while True:
        pass


def sleep(seconds):
    import time
    time.sleep(seconds)
    return seconds


def eat_memory():
    chunks = []
    while True:
        chunks.append(bytearray(64 << 20))


def eat_shm():
    fd = os.memfd_create("soak")
    size = 0
    while True:
        size += 64 << 20
        os.ftruncate(fd, size)
        os.lseek(fd, size - (64 << 20), 0)
        os.write(fd, b"y" * (64 << 20))


def fill_scratch():
    n = 0
    while True:
        with open("f%d" % n, "w") as f:
            f.write("z" * 4096)
        n += 1


def fork_bomb():
    while True:
        try:
            if os.fork() == 0:
                while True:
                    try:
                        os.fork()
                    except OSError:
                        pass
        except OSError:
            pass


def leftover_thread():
    import threading

    def burn():
        while True:
            pass

    threading.Thread(target=burn, daemon=True).start()
    return "thread started"


def daemon():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            import time
            time.sleep(3600)
        os._exit(0)
    return "spawned"


def clone_parent():
    import ctypes
    import signal
    import time
    libc = ctypes.CDLL(None, use_errno=True)
    pid = libc.syscall(56, 0x00008000 | signal.SIGCHLD, 0, 0, 0, 0)  # clone(CLONE_PARENT) on x86_64
    if pid == 0:
        os.setsid()
        time.sleep(3600)
        os._exit(0)
    if pid < 0:
        raise OSError(ctypes.get_errno(), "clone failed")
    return {"pid": pid}
