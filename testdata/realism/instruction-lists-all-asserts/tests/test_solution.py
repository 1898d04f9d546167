import sys
sys.path.insert(0, '/app')
from solution import digit_sum


def test_all():
    assert digit_sum(1234) == 10
    assert digit_sum(99999) == 45
    assert digit_sum(1000001) == 2
    assert digit_sum(777) == 21
