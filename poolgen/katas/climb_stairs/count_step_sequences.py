def __FN__(__A__: int, __B__: list) -> int:
    ways = [1] + [0] * __A__
    for total in range(1, __A__ + 1):
        for s in __B__:
            if s <= total:
                ways[total] += ways[total - s]
    return ways[__A__]
