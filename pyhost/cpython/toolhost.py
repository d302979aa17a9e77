"""toolhost: what tool code can ask its host.

    import toolhost
    ctx = toolhost.context()      # the call's context: session id, variables, agent, state
    sid = toolhost.session_id()   # None outside a session
    toolhost.agent(), toolhost.state(), toolhost.variables()
    key = toolhost.secret("API_KEY")  # a tenant secret the group declares
"""


def context():
    """The context of the call in progress: a dict (possibly empty)."""
    ctx = _context_getter()
    if not isinstance(ctx, dict):
        return {}
    out = dict(ctx)
    out.pop("secrets", None)
    return out


def secret(name):
    """The value of the tenant secret NAME, which the group lists under
    its secrets: key. PermissionError for a name the group does not
    declare; LookupError for one the tenant has not set."""
    ctx = _context_getter()
    secrets = ctx.get("secrets") if isinstance(ctx, dict) else None
    if not isinstance(secrets, dict) or name not in secrets:
        raise PermissionError("secret %r is not declared by this tool's group: list it under the group's secrets: key" % (name,))
    value = secrets[name]
    if value is None:
        raise LookupError("secret %r is declared but the tenant has not set it (PUT /v1/secrets/%s, or toolhost tenant secret set)" % (name, name))
    return value


def session_id():
    """The id of the session the call belongs to, or None."""
    return context().get("session_id")


def agent():
    """The name of the session's agent, or None."""
    return context().get("agent")


def state():
    """The session's current workflow state, or None."""
    return context().get("state")


def variables():
    """The session's variables (a copy), or {}."""
    return dict(context().get("variables") or {})


def _context_getter():  # replaced by the worker
    return None


def call_tool(name, args=None, idempotency_key=None, group=None):
    """Calls another tool of the tenant through the host (its whole
    pipeline: validation, idempotency, retries, templates) and returns its
    answer: a dict with success, content, error, blocks, ..."""
    return _call_tool_hook(name, args or {}, idempotency_key, group)


def _call_tool_hook(name, args, key, group=None):  # replaced by the worker
    raise RuntimeError("toolhost.call_tool is not available here")
