def __FN__(__A__: str) -> str:
    out = []
    i = 0
    while i < len(__A__):
        ch = __A__[i]
        i += 1
        j = i
        while j < len(__A__) and __A__[j].isdigit():
            j += 1
        n = int(__A__[i:j]) if j > i else 1
        out.append(ch * n)
        i = j
    return "".join(out)
