def __FN__(__A__: str) -> str:
    counts = {}
    for ch in __A__.lower():
        counts[ch] = counts.get(ch, 0) + 1
    for ch in __A__:
        if counts[ch.lower()] == 1:
            return ch
    return ""
