#!/bin/bash
cat > /app/stats.py <<'PY'
def rolling_median(xs, window):
    out = []
    for i in range(len(xs) - window + 1):
        w = sorted(xs[i:i + window])
        m = window // 2
        out.append(w[m] if window % 2 else (w[m - 1] + w[m]) / 2)
    return out
PY
