#!/bin/bash
cp /solution/solution.py /app/solution.py
