"""Session set-up for the collector campaign: masks sensitive data before
the model sees it. Runs on both runtimes."""


def _mask_email(email):
    if not email or email == "--EMPTY--":
        return None
    parts = email.split("@")
    if len(parts) != 2:
        return None
    return parts[0][:1] + "***@" + parts[1]


def session_init(HumanFullName, HumanEmail=None):
    words = HumanFullName.split()
    first = words[0] if words else ""
    return {"HumanFirstName": first, "HumanEmailMasked": _mask_email(HumanEmail)}
