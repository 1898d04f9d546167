def __FN__(__A__: list, __B__: int) -> list:
    out = []
    for item in __A__:
        if isinstance(item, list) and __B__ > 0:
            out.extend(__FN__(item, __B__ - 1))
        else:
            out.append(item)
    return out
