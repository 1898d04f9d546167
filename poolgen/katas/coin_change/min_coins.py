def __FN__(__A__: list, __B__: int) -> int:
    INF = float("inf")
    best = [0] + [INF] * __B__
    for value in range(1, __B__ + 1):
        for c in __A__:
            if c <= value and best[value - c] + 1 < best[value]:
                best[value] = best[value - c] + 1
    return -1 if best[__B__] == INF else best[__B__]
