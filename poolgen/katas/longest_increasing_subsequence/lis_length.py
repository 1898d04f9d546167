def __FN__(__A__: list) -> int:
    best = [1] * len(__A__)
    for i in range(len(__A__)):
        for j in range(i):
            if __A__[j] < __A__[i] and best[j] + 1 > best[i]:
                best[i] = best[j] + 1
    return max(best, default=0)
