def __FN__(__A__: str) -> dict:
    counts = {}
    for ch in __A__.lower():
        if ch.isalpha():
            counts[ch] = counts.get(ch, 0) + 1
    return dict(sorted(counts.items()))
