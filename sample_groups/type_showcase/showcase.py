"""Echoes its arguments with the Python type each arrived as. It runs on
both runtimes (gpython has no type(x).__name__)."""


def _kind(value):
    if value is None:
        return "NoneType"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "dict"
    return "other"


def echo(**kwargs):
    out = {}
    for name in kwargs:
        out[name] = {"value": kwargs[name], "type": _kind(kwargs[name])}
    return out
