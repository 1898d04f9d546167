#!/bin/bash
cat > /app/semsort.py <<'PY'
import sys

def key(v):
    core, _, pre = v.partition("-")
    nums = tuple(int(x) for x in core.split("."))
    return (nums, 0 if pre else 1, pre)

for v in sorted((l.strip() for l in sys.stdin if l.strip()), key=key):
    print(v)
PY
