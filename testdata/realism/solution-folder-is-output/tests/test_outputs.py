from pathlib import Path


def test_summary():
    lines = Path("/app/solution/summary.txt").read_text().split()
    assert lines[:2] == ["api", "2"]
