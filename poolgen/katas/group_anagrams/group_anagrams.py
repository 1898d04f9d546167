def __FN__(__A__: list) -> list:
    groups = {}
    for w in __A__:
        groups.setdefault("".join(sorted(w)), []).append(w)
    return sorted(sorted(g) for g in groups.values())
