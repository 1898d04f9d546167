import json

rows = {}
with open("/app/events.jsonl") as f:
    for line in f:
        row = json.loads(line)
        rows[row["id"]] = row
with open("/app/events.clean.jsonl", "w") as f:
    for row in rows.values():
        f.write(json.dumps(row) + "\n")
