def __FN__(__A__: list, __B__: int) -> list:
    return [__A__[i:i + __B__] for i in range(0, len(__A__), __B__)]
