def __FN__(__A__: str) -> str:
    return " ".join(w[:1].upper() + w[1:].lower() for w in __A__.split(" "))
