"""Session set-up and clean-up for the collector campaign: masks sensitive
data before the model sees it, and says goodbye. Runs on both runtimes."""

import toolhost


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


def session_finish(HumanFirstName):
    return {"Farewell": "Goodbye, " + HumanFirstName + "!", "FinishedInState": toolhost.state()}
