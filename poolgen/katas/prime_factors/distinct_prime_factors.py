def __FN__(__A__: int) -> list:
    out = []
    p = 2
    while p * p <= __A__:
        if __A__ % p == 0:
            out.append(p)
            while __A__ % p == 0:
                __A__ //= p
        p += 1
    if __A__ > 1:
        out.append(__A__)
    return out
