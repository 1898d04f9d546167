def __FN__(__A__: list, __B__: int) -> int:
    lo, hi = 0, len(__A__)
    while lo < hi:
        mid = (lo + hi) // 2
        if __A__[mid] <= __B__:
            lo = mid + 1
        else:
            hi = mid
    return lo
