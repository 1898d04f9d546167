def __FN__(__A__: str) -> str:
    out = []
    for i, ch in enumerate(__A__):
        if ch.isupper():
            if i > 0:
                out.append("_")
            out.append(ch.lower())
        else:
            out.append(ch)
    return "".join(out)
