def __FN__(__A__: list, __B__: int) -> list:
    for j in range(len(__A__)):
        for i in range(j):
            if __A__[i] + __A__[j] == __B__:
                return [i, j]
    return []
