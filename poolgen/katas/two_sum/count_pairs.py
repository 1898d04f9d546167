def __FN__(__A__: list, __B__: int) -> int:
    count = 0
    for j in range(len(__A__)):
        for i in range(j):
            if __A__[i] + __A__[j] == __B__:
                count += 1
    return count
