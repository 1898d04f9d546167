import sys
sys.path.insert(0, '/app')
from solution import peek


def test_peek():
    assert peek([1, 2]) == 2
