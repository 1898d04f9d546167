def rolling_median(xs, window):
    out = []
    for i in range(len(xs) - window + 1):
        w = sorted(xs[i:i + window])
        out.append(w[window // 2])
    return out
