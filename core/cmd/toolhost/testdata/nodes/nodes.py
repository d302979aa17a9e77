import binascii
import os
import time


def where(word):
    return {"word": word}


def reserve(item):
    # Long enough for every duplicate to arrive while the first runs.
    time.sleep(1.0)
    return {"item": item, "reservation": binascii.hexlify(os.urandom(8)).decode()}


def sleep(seconds):
    time.sleep(seconds)
    return {"slept": seconds}
