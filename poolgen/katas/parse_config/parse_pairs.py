def __FN__(__A__: str) -> dict:
    result = {}
    for item in __A__.split(";"):
        item = item.strip()
        if not item:
            continue
        key, _, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if value.lstrip("-").isdigit():
            result[key] = int(value)
        else:
            result[key] = value
    return result
