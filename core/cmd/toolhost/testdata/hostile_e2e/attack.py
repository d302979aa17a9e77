"""Tenant A's tools: each runs an attack on the host, the server or
tenant B. The end-to-end hostile suite (hostile_test.go) hands `attack`
Python snippets that set `out`; every one must be contained."""
import ctypes
import os


def attack(code):
    scope = {"sc": sc}
    exec(code, scope)
    return scope.get("out")


def sc(nr, *args):
    """Makes raw system call nr; raises OSError with its errno when the
    kernel (or seccomp) refuses it."""
    libc = ctypes.CDLL(None, use_errno=True)
    r = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
    if r == -1:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r


def spin():
    while True:
        pass


def spin_many(n=4):
    """Spins in n processes at once: a tenant trying to starve the others
    of CPU."""
    for _ in range(n - 1):
        if os.fork() == 0:
            while True:
                pass
    while True:
        pass


def ok(x=1):
    return {"still": "here", "x": x}
