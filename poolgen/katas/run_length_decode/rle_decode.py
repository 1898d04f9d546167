def __FN__(__A__: str) -> str:
    out = []
    num = ""
    for ch in __A__:
        if ch.isdigit():
            num += ch
        else:
            out.append(ch * int(num))
            num = ""
    return "".join(out)
