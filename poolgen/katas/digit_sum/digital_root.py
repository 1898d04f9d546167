def __FN__(__A__: int) -> int:
    while __A__ >= 10:
        __A__ = sum(int(d) for d in str(__A__))
    return __A__
