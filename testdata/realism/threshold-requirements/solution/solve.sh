#!/bin/bash
sed -i 's/LR = 10.0/LR = 0.01/' /app/train.py && cd /app && python3 train.py
