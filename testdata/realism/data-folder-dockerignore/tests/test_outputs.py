import json
import subprocess


def test_held():
    ref = json.load(open("/tests/data/reference.json"))
    for rec, want in ref.items():
        out = subprocess.run(["python3", "/app/solve.py"], input=rec, capture_output=True, text=True).stdout.strip()
        assert out == want
