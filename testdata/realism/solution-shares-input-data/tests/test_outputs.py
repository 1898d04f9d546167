import json


def test_counts():
    c = json.load(open("/app/out/counts.json"))
    assert c == {"a": 2, "b": 1}
