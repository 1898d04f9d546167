def __FN__(__A__: str) -> dict:
    result = {}
    for line in __A__.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition("=")
        result[key.strip()] = value.strip()
    return result
