#!/bin/bash
python3 /tests/grader.py
