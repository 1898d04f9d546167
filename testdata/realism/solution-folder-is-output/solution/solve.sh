#!/bin/bash
grep ERROR /app/logs/app.log | cut -d' ' -f1 | sort | uniq -c | sort -rn | awk '{print $2, $1}' > /app/solution/summary.txt
