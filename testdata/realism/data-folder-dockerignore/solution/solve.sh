#!/bin/bash
cp /solution/solve.py /app/solve.py
