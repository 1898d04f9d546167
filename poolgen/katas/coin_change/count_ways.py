def __FN__(__A__: list, __B__: int) -> int:
    ways = [1] + [0] * __B__
    for c in __A__:
        for value in range(c, __B__ + 1):
            ways[value] += ways[value - c]
    return ways[__B__]
