def __FN__(__A__: list) -> list:
    out = []
    for item in __A__:
        if isinstance(item, list):
            out.extend(__FN__(item))
        else:
            out.append(item)
    return out
