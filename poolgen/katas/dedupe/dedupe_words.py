def __FN__(__A__: list) -> list:
    seen = set()
    out = []
    for x in __A__:
        if x.lower() not in seen:
            seen.add(x.lower())
            out.append(x)
    return out
