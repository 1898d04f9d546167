#!/bin/bash
mkdir -p /logs/verifier

# No network here: the plugin comes from the image's wheelhouse.
pip install --quiet --no-index --find-links /opt/wheels pytest-timeout
uv pip install --offline --system --quiet --find-links /opt/wheels pytest-timeout 2>/dev/null || true

cd /app && python /app/dedupe.py
pytest -q --timeout 60 /tests/test_dedupe.py
if [ $? -eq 0 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
