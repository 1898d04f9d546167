def __FN__(__A__: str) -> int:
    counts = {}
    for ch in __A__:
        counts[ch] = counts.get(ch, 0) + 1
    for i, ch in enumerate(__A__):
        if counts[ch] == 1:
            return i
    return -1
