def __FN__(__A__: list) -> list:
    out = []
    if not __A__:
        return out
    top, bottom, left, right = 0, len(__A__) - 1, 0, len(__A__[0]) - 1
    while top <= bottom and left <= right:
        for j in range(left, right + 1):
            out.append(__A__[top][j])
        for i in range(top + 1, bottom + 1):
            out.append(__A__[i][right])
        if top < bottom and left < right:
            for j in range(right - 1, left - 1, -1):
                out.append(__A__[bottom][j])
            for i in range(bottom - 1, top, -1):
                out.append(__A__[i][left])
        top, bottom, left, right = top + 1, bottom - 1, left + 1, right - 1
    return out
