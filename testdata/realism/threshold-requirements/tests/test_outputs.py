import json

LIMITS = [
    ("grad_norm", 50.0),
    ("val_loss", 0.35),
]


def test_limits():
    m = json.load(open("/app/metrics.json"))
    for key, limit in LIMITS:
        assert m[key] < limit, (key, m[key])
