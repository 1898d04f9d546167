def __FN__(__A__: str, __B__: int) -> list:
    import re
    counts = {}
    for w in re.findall(r"[a-z]+", __A__.lower()):
        counts[w] = counts.get(w, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [[w, c] for w, c in ranked[:__B__]]
