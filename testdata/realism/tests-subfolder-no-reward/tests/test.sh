#!/bin/bash
# Runs the checks; the exit status is the result.
cd /tests
python3 -m pytest -q test_wc.py
exit $?
