"""Tenant A's tools for the gpython runtime (a Python 3.4 subset without
os, re or json): each attacks its host the way gpython allows."""
import sys


def read(path):
    return open(path).read()


def uses_os():
    import os
    return os.getcwd()


def exits(code=3):
    sys.exit(code)
    return "went on"


def stdin():
    return [sys.stdin.read(), sys.__stdin__.read()]


def recurse(n=0):
    return recurse(n + 1)


def spin():
    while True:
        pass


def eat():
    x = []
    while True:
        x.append([0] * 1000000)


def ok(x=1):
    return {"still": "here", "x": x}
