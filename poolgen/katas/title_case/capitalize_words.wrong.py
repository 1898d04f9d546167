def __FN__(__A__: str) -> str:
    return __A__.title()
