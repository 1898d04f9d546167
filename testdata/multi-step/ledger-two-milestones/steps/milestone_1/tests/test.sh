#!/bin/bash
cd /app
python3 - <<'PY'
import sys, tempfile
sys.path.insert(0, "/app")
from ledger import parse
with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
    f.write("date,account,amount\n2025-01-02,cash,1250\n")
assert parse(f.name) == [("2025-01-02", "cash", 1250)]
PY
if [ $? -eq 0 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
