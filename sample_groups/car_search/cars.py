"""A small car catalogue for the pipeline sample. Runs on both runtimes."""
import toolhost

CARS = [
    {"model": "Toyota Corolla", "price": 21000},
    {"model": "Toyota Camry", "price": 28000},
    {"model": "Skoda Octavia", "price": 24000},
    {"model": "Lada Vesta", "price": 15000},
    {"model": "Kia Rio", "price": 17000},
]

PAGE = 2


def _lower(text):
    # gpython's str has no lower(): ASCII letters by hand.
    out = ""
    for ch in text:
        if "A" <= ch <= "Z":
            ch = chr(ord(ch) + 32)
        out += ch
    return out


def search(query, cursor=0):
    if query == "explode":
        raise RuntimeError("the catalogue service is down")
    # A loop, not a comprehension: gpython's comprehensions cannot see the
    # function's locals.
    found = []
    for c in CARS:
        if _lower(query) in _lower(c["model"]):
            found.append(c)
    page = found[cursor:cursor + PAGE]
    more = cursor + PAGE < len(found)
    nxt = None
    if more:
        nxt = {"cursor": cursor + PAGE}
    return {
        "total": len(found),
        "items": page,
        "page_info": {"returned": len(page), "total": len(found), "has_more": more},
        "next": nxt,
    }


def cached(query, cursor=0):
    return {"total": 1, "items": [{"model": "Cached " + query, "price": 0}],
            "page_info": {"returned": 1, "total": 1, "has_more": False}, "next": None}


def report():
    return {"labels": ["Q1", "Q2", "Q3", "Q4"], "series": [{"name": "Цена", "values": [10, 20, 15, 30]}]}


def dealers():
    rows = [{"dealer": "Академ", "lat": 54.85, "lon": 83.10}]
    return toolhost.result(
        content={"dealers": 1},
        visual=[
            toolhost.map(center={"lat": 54.85, "lon": 83.10}, zoom=14,
                         markers=[{"lat": 54.85, "lon": 83.10, "label": "Академ"}],
                         tile_url="https://tile.openstreetmap.org/{z}/{x}/{y}.png",
                         attribution="© OpenStreetMap contributors"),
            toolhost.table(["dealer", "lat", "lon"], rows),
            toolhost.file("report.html", "text/html", "<h1>Hi</h1>"),
        ],
    )


RESERVATIONS = []


def reserve(model, customer):
    RESERVATIONS.append((model, customer))
    return {"reserved": model, "for": customer, "reservation": len(RESERVATIONS)}


def best_offer(query):
    """Calls search_cars through the host (its whole pipeline) and picks
    the cheapest car of the first page from the table it shows."""
    answer = toolhost.call_tool("search_cars", {"query": query})
    if not answer["success"]:
        return {"error": answer["error"]["message"]}
    rows = []
    for block in answer["blocks"]:
        if block["type"] == "table":
            rows = block["rows"]
    best = None
    for row in rows:
        if best is None or row["price"] < best["price"]:
            best = row
    return {"best": best, "searched": answer["content"]["total"]}
