#!/bin/bash

# The image has no pytest: fetch uv, then run the tests with a pinned pytest.
apt-get update
apt-get install -y curl

curl -LsSf https://astral.sh/uv/0.8.3/install.sh | sh
source "$HOME/.local/bin/env"

uvx -p 3.12 -w pytest==8.4.1 pytest /tests/test_outputs.py -rA

if [ $? -eq 0 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
