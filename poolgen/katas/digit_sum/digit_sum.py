def __FN__(__A__: int) -> int:
    total = sum(int(d) for d in str(abs(__A__)))
    return -total if __A__ < 0 else total
