def echo(x, note=""):
    return x
