#!/bin/bash
# The reward and the pytest report both go to the verifier's log folder.
python3 -m pytest -rA /tests/test_semsort.py --junitxml=/tmp/junit.xml
status=$?
cd /logs/verifier || exit 1
cp /tmp/junit.xml junit.xml
if [ "$status" -eq 0 ]; then
  printf '1\n' > reward.txt
else
  printf '0\n' > reward.txt
fi
