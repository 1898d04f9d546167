#!/bin/bash
cd /app && cmake -S . -B build >/dev/null && cmake --build build >/dev/null
python3 -m pytest -q /tests/test_outputs.py
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
