def __FN__(__A__: list) -> list:
    seen = set()
    out = []
    for x in __A__:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out
