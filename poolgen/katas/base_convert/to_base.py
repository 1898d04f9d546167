def __FN__(__A__: int, __B__: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    if __A__ == 0:
        return "0"
    sign = "-" if __A__ < 0 else ""
    __A__ = abs(__A__)
    out = []
    while __A__:
        __A__, r = divmod(__A__, __B__)
        out.append(digits[r])
    return sign + "".join(reversed(out))
