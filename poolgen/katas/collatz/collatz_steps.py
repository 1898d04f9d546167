def __FN__(__A__: int) -> int:
    steps = 0
    while __A__ != 1:
        __A__ = __A__ // 2 if __A__ % 2 == 0 else 3 * __A__ + 1
        steps += 1
    return steps
