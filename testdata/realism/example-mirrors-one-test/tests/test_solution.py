import sys

sys.path.insert(0, "/app")

from solution import run_length


def test_1():
    assert run_length("aaabcc") == '3a1b2c'


def test_2():
    assert run_length("zzzzzz") == '6z'


def test_3():
    assert run_length("abcd") == '1a1b1c1d'


def test_4():
    assert run_length("qqwe") == '2q1w1e'
