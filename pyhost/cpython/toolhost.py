"""toolhost: what tool code can ask its host.

    import toolhost
    ctx = toolhost.context()      # the call's context: session id, variables, agent, state
    sid = toolhost.session_id()   # None outside a session
"""


def context():
    """The context of the call in progress: a dict (possibly empty)."""
    ctx = _context_getter()
    return dict(ctx) if isinstance(ctx, dict) else {}


def session_id():
    """The id of the session the call belongs to, or None."""
    return context().get("session_id")


def variables():
    """The session's variables (a copy), or {}."""
    return dict(context().get("variables") or {})


def _context_getter():  # replaced by the worker
    return None
