def __FN__(__A__: list) -> list:
    out = []
    for start, end in sorted(__A__):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return out
