def __FN__(__A__: list) -> str:
    if not __A__:
        return ""
    first, last = __A__[0], __A__[-1]
    i = 0
    while i < min(len(first), len(last)) and first[i] == last[i]:
        i += 1
    return first[:i]
