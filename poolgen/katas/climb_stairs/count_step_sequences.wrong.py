def __FN__(__A__: int, __B__: list) -> int:
    ways = [1] + [0] * __A__
    for s in __B__:
        for total in range(s, __A__ + 1):
            ways[total] += ways[total - s]
    return ways[__A__]
