def __FN__(__A__: str) -> int:
    best = ""
    for i in range(len(__A__)):
        for lo, hi in ((i, i), (i, i + 1)):
            while lo >= 0 and hi < len(__A__) and __A__[lo] == __A__[hi]:
                lo -= 1
                hi += 1
            if hi - lo - 1 > len(best):
                best = __A__[lo + 1:hi]
    return len(best)
