import toolhost


def init_greet(HumanFullName):
    return {"FirstName": HumanFullName.split()[0], "Greeted": True}


def init_broken():
    raise RuntimeError("the CRM is down")


def init_counts(Visits):
    return {"Visits": Visits + 1}


def init_not_dict():
    return ["not", "a", "dict"]


def finish_bye(FirstName):
    return {"Bye": "Bye " + FirstName, "EndState": toolhost.state()}


def whoami():
    return {"session": toolhost.session_id(), "agent": toolhost.agent(), "state": toolhost.state(),
            "first": toolhost.variables().get("FirstName")}


def init_maybe(HumanFullName, Email):
    return {"Contact": HumanFullName + " <" + (Email if Email is not None else "no email") + ">"}
