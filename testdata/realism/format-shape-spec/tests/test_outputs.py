import sys
sys.path.insert(0, "/app")
from features import build, header


def test_shape():
    assert build("/app/data.csv").shape == (2, 1)


def test_header():
    assert header() == "id,score"


def test_output_name():
    assert out_name("data.csv") == "/app/out/features.csv"
