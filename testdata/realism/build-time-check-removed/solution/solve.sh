#!/bin/bash
sed -i 's/line.split(",")\[:3\]/next(csv.reader([line]))/' /app/ledger/parser.py
