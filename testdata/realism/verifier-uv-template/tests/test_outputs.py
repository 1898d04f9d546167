import csv
from pathlib import Path

OUT = Path("/app/sales_2024.csv")


def rows():
    with OUT.open(newline="") as f:
        return list(csv.DictReader(f))


def test_output_exists():
    assert OUT.exists()


def test_sorted_and_no_empty_amounts():
    r = rows()
    assert [x["date"] for x in r] == sorted(x["date"] for x in r)
    assert all(x["amount"] for x in r)


def test_unix_line_endings():
    assert b"\r\n" not in OUT.read_bytes()
