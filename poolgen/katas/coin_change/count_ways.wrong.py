def __FN__(__A__: list, __B__: int) -> int:
    ways = [1] + [0] * __B__
    for value in range(1, __B__ + 1):
        for c in __A__:
            if c <= value:
                ways[value] += ways[value - c]
    return ways[__B__]
