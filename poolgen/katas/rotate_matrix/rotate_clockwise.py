def __FN__(__A__: list) -> list:
    return [list(row) for row in zip(*__A__[::-1])]
