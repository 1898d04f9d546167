import json


def load():
    return json.load(open("/app/summary.json"))


def test_counts():
    s = load()
    assert s["requests"] == 3
    assert s["errors"] == 1


def test_top_path():
    assert load()["top_path"] == "/home"
