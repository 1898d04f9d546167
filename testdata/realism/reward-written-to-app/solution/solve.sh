#!/bin/bash
python3 - <<'PY'
import collections, json
lines = open("/app/access.log").read().splitlines()
paths = collections.Counter(l.split('"')[1].split()[1] for l in lines)
errors = sum(1 for l in lines if int(l.split('"')[2].split()[0]) >= 500)
json.dump({"requests": len(lines), "errors": errors, "top_path": paths.most_common(1)[0][0]}, open("/app/summary.json", "w"))
PY
