#!/bin/bash
cat > /app/wc.py <<'PY'
import sys
print(len(open(sys.argv[1]).read().split()))
PY
