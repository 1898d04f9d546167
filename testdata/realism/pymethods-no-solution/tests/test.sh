#!/bin/bash
cd /app
if [ ! -f /app/solution.py ]; then cp "$(ls /app/*.py | head -n 1)" /app/solution.py; fi
if python3 -m pytest -q /tests/test_solution.py; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
