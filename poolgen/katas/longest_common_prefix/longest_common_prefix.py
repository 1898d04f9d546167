def __FN__(__A__: list) -> str:
    if not __A__:
        return ""
    prefix = __A__[0]
    for w in __A__[1:]:
        while not w.startswith(prefix):
            prefix = prefix[:-1]
    return prefix
