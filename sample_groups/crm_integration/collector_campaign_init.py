"""Session set-up for the collector campaign: masks sensitive data before
the model sees it."""


def _mask_email(email):
    if not email or email == "--EMPTY--":
        return None
    user, _, domain = email.partition("@")
    return user[:1] + "***@" + domain


def session_init(HumanFullName, HumanEmail=None):
    first = HumanFullName.split()[0] if HumanFullName.split() else ""
    return {"HumanFirstName": first, "HumanEmailMasked": _mask_email(HumanEmail)}
