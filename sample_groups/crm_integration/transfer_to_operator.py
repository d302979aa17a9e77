"""Hands the conversation over to a human operator."""


def transfer_to_operator():
    return {"transferred": True, "queue": "operators"}
