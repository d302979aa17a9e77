"""Tenant B's tools: the victim of tenant A's attacks. It keeps a secret in
its scratch and answers what it was given, with its session context."""
import os

import toolhost


def remember(secret):
    with open("/tmp/victim-secret.txt", "w") as f:
        f.write(secret)
    return {"pid": os.getpid()}


def recall(x):
    with open("/tmp/victim-secret.txt") as f:
        kept = f.read()
    return {"x": x, "kept": kept, "context": toolhost.context()}
