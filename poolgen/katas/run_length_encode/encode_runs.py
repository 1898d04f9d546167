def __FN__(__A__: str) -> str:
    out = []
    i = 0
    while i < len(__A__):
        j = i
        while j < len(__A__) and __A__[j] == __A__[i]:
            j += 1
        out.append(str(j - i) + __A__[i])
        i = j
    return "".join(out)
