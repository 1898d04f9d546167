import subprocess
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"


def count(name):
    out = subprocess.run(["python3", "/app/wc.py", str(FIXTURES / name)], capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


def test_plain():
    assert count("three.txt") == 3


def test_empty():
    assert count("empty.txt") == 0
