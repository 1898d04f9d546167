def __FN__(__A__: list, __B__: int) -> list:
    if not __A__:
        return []
    k = __B__ % len(__A__)
    return __A__[k:] + __A__[:k]
