def __FN__(__A__: list) -> int:
    best = cur = 0
    for x in __A__:
        cur = max(0, cur + x)
        best = max(best, cur)
    return best
