#!/bin/bash
echo 'def digit_sum(n): return sum(map(int, str(n)))' > /app/solution.py
