def __FN__(__A__: list) -> int:
    from math import gcd
    result = 1
    for x in __A__:
        result = result * x // gcd(result, x)
    return result
