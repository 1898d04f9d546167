def __FN__(__A__: list) -> int:
    from math import gcd
    result = 0
    for x in __A__:
        result = gcd(result, x)
    return result
