def __FN__(__A__: str, __B__: int) -> str:
    out = []
    for ch in __A__:
        if "a" <= ch <= "z":
            out.append(chr((ord(ch) - 97 - __B__) % 26 + 97))
        elif "A" <= ch <= "Z":
            out.append(chr((ord(ch) - 65 - __B__) % 26 + 65))
        else:
            out.append(ch)
    return "".join(out)
