def __FN__(__A__: str) -> str:
    out = []
    i = 0
    while i < len(__A__):
        j = i
        while j < len(__A__) and __A__[j] == __A__[i]:
            j += 1
        n = j - i
        out.append(__A__[i] + (str(n) if n > 1 else ""))
        i = j
    return "".join(out)
