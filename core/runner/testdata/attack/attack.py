"""A tool that runs the attack it is given: the sandbox tests hand it
Python snippets that set `out`. Every snippet must be contained."""


def attack(code):
    scope = {}
    exec(code, scope)
    return scope.get("out")
