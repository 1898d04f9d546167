#!/bin/bash
cat > /app/ledger.py <<'PY'
import csv

def parse(path):
    with open(path) as f:
        return [(r["date"], r["account"], int(r["amount"])) for r in csv.DictReader(f)]
PY
