"""Tools for the tests of the call path's doors: they run on both runtimes."""
import time

import toolhost


def slow(seconds):
    time.sleep(seconds)
    return {"slept": seconds}


def need(count):
    return {"count": count}


def relay(tool, args):
    # The arguments go as given: a string holding JSON, or None for "null".
    return toolhost.call_tool(tool, None if args == "null" else args)
