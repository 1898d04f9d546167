#!/bin/bash
mkdir -p /logs/verifier
GATEWAY=http://127.0.0.1:7070

# Start the gateway the agent fixed and wait until it answers.
python3 /app/gateway/server.py > /logs/verifier/gateway.log 2>&1 &
for i in $(seq 1 30); do
  if curl -sf "$GATEWAY/health" > /dev/null; then
    break
  fi
  sleep 1
done
wget -q -O /logs/verifier/first-order.json "http://localhost:7070/orders/1" || true

pytest -q /tests/test_gateway.py
if [ $? -eq 0 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
