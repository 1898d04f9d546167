def __FN__(__A__: str) -> str:
    counts = {}
    for ch in __A__:
        counts[ch] = counts.get(ch, 0) + 1
    if not counts:
        return ""
    return min(counts, key=lambda ch: (-counts[ch], ch))
