import requests

BASE = "http://127.0.0.1:7070"


def test_health():
    assert requests.get(f"{BASE}/health", timeout=5).status_code == 200


def test_order_is_json():
    r = requests.get(f"{BASE}/orders/1", timeout=5)
    assert r.status_code == 200
    assert r.json()["id"] == 1
