from provision.engine.verdict import verdict


def judge(host: str, check, profile, texts: dict[str, str]):
    """The engine's verdict on saved outputs (step key -> text) of one node-scope job."""
    return verdict(check, (host,), check.scope, profile, texts)
