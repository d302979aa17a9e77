# Helpers for the content and visual layers of a call (spec 000). Shared
# by both runtimes: it is Python 3.4 (gpython) and uses no imports at
# module level.


def result(content=None, visual=None):
    """The result of a tool that sets its layers itself: content goes to the
    model, visual (a list of blocks) only to the UI."""
    return {"__toolhost_result__": {"content": content, "visual": list(visual or [])}}


def text(markdown):
    """A text block."""
    return {"type": "text", "markdown": markdown}


def table(columns, rows, title=None, page_info=None, options=None, continuation=None):
    """A table block. columns are keys or {key, title, align}; rows are
    dicts. With page_info {returned, total, has_more} and continuation (the
    arguments that fetch the next page), the UI can load more."""
    cols = []
    for c in columns:
        if isinstance(c, str):
            c = {"key": c, "title": c}
        cols.append(c)
    b = {"type": "table", "columns": cols, "rows": list(rows)}
    if title is not None:
        b["title"] = title
    if page_info is not None:
        b["page_info"] = page_info
    if options is not None:
        b["options"] = options
    if continuation is not None:
        b["continuation"] = continuation
    return b


def chart(type, labels, series, title=None, options=None):
    """A chart block: type is bar, line, area, pie or scatter; series are
    {name, values}."""
    spec = {"type": type, "labels": list(labels), "series": list(series)}
    if title is not None:
        spec["title"] = title
    if options is not None:
        spec["options"] = options
    return {"type": "chart", "spec": spec}


def map(center, markers=None, zoom=None, title=None, tile_url=None, attribution=None, link=None):
    """A map block: center and markers are {lat, lon[, label]}."""
    b = {"type": "map", "center": center, "markers": list(markers or [])}
    for k, v in (("zoom", zoom), ("title", title), ("tile_url", tile_url), ("attribution", attribution), ("link", link)):
        if v is not None:
            b[k] = v
    return b


_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _utf8(text):
    out = []
    for ch in text:
        c = ord(ch)
        if c < 0x80:
            out.append(c)
        elif c < 0x800:
            out += [0xC0 | (c >> 6), 0x80 | (c & 0x3F)]
        elif c < 0x10000:
            out += [0xE0 | (c >> 12), 0x80 | ((c >> 6) & 0x3F), 0x80 | (c & 0x3F)]
        else:
            out += [0xF0 | (c >> 18), 0x80 | ((c >> 12) & 0x3F), 0x80 | ((c >> 6) & 0x3F), 0x80 | (c & 0x3F)]
    return out


def _base64(octets):
    out = ""
    for i in range(0, len(octets), 3):
        chunk = octets[i:i + 3]
        n = chunk[0] << 16
        if len(chunk) > 1:
            n = n | (chunk[1] << 8)
        if len(chunk) > 2:
            n = n | chunk[2]
        out += _B64[(n >> 18) & 63] + _B64[(n >> 12) & 63]
        out += _B64[(n >> 6) & 63] if len(chunk) > 1 else "="
        out += _B64[n & 63] if len(chunk) > 2 else "="
    return out


def file(name, mime, data):
    """A file block; data is bytes or text (sent as UTF-8), base64-encoded
    here (in plain Python, so that it runs on both runtimes)."""
    if isinstance(data, str):
        octets = _utf8(data)
    else:
        octets = list(data)
    return {"type": "file", "name": name, "mime": mime, "data": _base64(octets)}
