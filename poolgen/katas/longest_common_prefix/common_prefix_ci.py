def __FN__(__A__: list) -> str:
    words = [w.lower() for w in __A__]
    if not words:
        return ""
    prefix = words[0]
    for w in words[1:]:
        while not w.startswith(prefix):
            prefix = prefix[:-1]
    return prefix
