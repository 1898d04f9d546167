import json


def rows():
    with open("/app/events.clean.jsonl") as f:
        return [json.loads(line) for line in f]


def test_first_duplicate_kept():
    ids = [r["id"] for r in rows()]
    assert len(ids) == len(set(ids))
    assert {r["id"]: r["v"] for r in rows()}[1] == "a"
