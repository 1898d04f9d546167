def __FN__(__A__: list, __B__: list, __C__: int) -> int:
    best = [0] * (__C__ + 1)
    for w, v in zip(__A__, __B__):
        for cap in range(__C__, w - 1, -1):
            best[cap] = max(best[cap], best[cap - w] + v)
    return best[__C__]
