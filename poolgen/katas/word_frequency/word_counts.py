def __FN__(__A__: str) -> dict:
    import re
    counts = {}
    for w in re.findall(r"[a-z]+", __A__.lower()):
        counts[w] = counts.get(w, 0) + 1
    return dict(sorted(counts.items()))
