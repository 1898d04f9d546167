def __FN__(__A__: list) -> int:
    best = cur = __A__[0]
    for x in __A__[1:]:
        cur = max(x, cur + x)
        best = max(best, cur)
    return best
