def __FN__(__A__: int) -> int:
    a, b = 1, 1
    for _ in range(__A__):
        a, b = b, a + b
    return a
