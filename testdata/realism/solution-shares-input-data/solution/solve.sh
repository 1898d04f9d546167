#!/bin/bash
python3 /solution/count.py /app/datasets/trace.log > /app/out/counts.json
