def __FN__(__A__: list) -> str:
    words = [w.lower() for w in __A__]
    if not words:
        return ""
    first, last = words[0], words[-1]
    i = 0
    while i < min(len(first), len(last)) and first[i] == last[i]:
        i += 1
    return first[:i]
