def __FN__(__A__: str) -> int:
    for i, ch in enumerate(__A__):
        if ch not in __A__[i + 1:]:
            return i
    return -1
