def __FN__(__A__: str, __B__: int) -> int:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    sign = -1 if __A__.startswith("-") else 1
    value = 0
    for ch in __A__.lstrip("-"):
        value = value * __B__ + digits.index(ch.lower())
    return sign * value
