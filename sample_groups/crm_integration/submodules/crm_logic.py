"""Posts leads to the corporate CRM.

Written for both runtimes: it uses only what gpython (a Python 3.4 subset
without re and most str methods) offers, so it runs on cpython and gpython.
"""


def _is_email(text):
    parts = text.split("@")
    if len(parts) != 2 or " " in text:
        return False
    user, domain = parts[0], parts[1]
    return len(user) > 0 and "." in domain and not domain.startswith(".") and not domain.endswith(".")


def post_lead(client_name, client_email=None):
    """Validates the contact and returns the CRM's answer."""
    name = client_name.strip()
    if not name:
        raise ValueError("client_name is empty")
    if client_email is None or client_email == "" or client_email == "--EMPTY--":
        client_email = None
    elif not _is_email(client_email):
        raise ValueError("client_email '" + client_email + "' is not an email address")
    return {
        "status": "accepted",
        "lead": {"name": name, "email": client_email},
    }
