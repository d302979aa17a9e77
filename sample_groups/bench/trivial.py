"""A tool that does nothing, for measuring the host. Runs on both runtimes."""


def noop(x=0):
    return {"x": x}
