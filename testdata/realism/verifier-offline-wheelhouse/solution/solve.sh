#!/bin/bash
sed -i 's/        rows\[row\["id"\]\] = row/        rows.setdefault(row["id"], row)/' /app/dedupe.py
