"""Echoes its arguments with the Python type each arrived as."""


def echo(**kwargs):
    return {name: {"value": value, "type": type(value).__name__} for name, value in kwargs.items()}
