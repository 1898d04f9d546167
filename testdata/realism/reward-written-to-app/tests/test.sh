#!/bin/bash
set -u
cd /tests
python3 -m pytest -rA test_summary.py
status=$?

mkdir -p /app
if [ "$status" -eq 0 ]; then
  echo 1 > /app/reward.txt
else
  echo 0 > /app/reward.txt
fi
exit "$status"
