def __FN__(__A__: str) -> str:
    small = {"a", "an", "and", "the", "of", "in", "on", "to"}
    out = []
    for i, w in enumerate(__A__.split(" ")):
        if i > 0 and w.lower() in small:
            out.append(w.lower())
        else:
            out.append(w[:1].upper() + w[1:].lower())
    return " ".join(out)
