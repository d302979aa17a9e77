import time


def echo(text, times=1):
    return {"echo": text * times}


def boom():
    raise ValueError("kaboom")


def nap(seconds):
    time.sleep(seconds)
    return {"slept": seconds}


def report(n):
    return {"n": n, "items": list(range(n))}


def hello(Name):
    return {"Greeting": "Hello " + Name}


def bye(Greeting):
    return {"Farewell": Greeting.replace("Hello", "Bye")}
