import pytest
from solution import Stack


def test_peek():
    s = Stack()
    s.push(7)
    assert s.peek() == 7


def test_empty():
    with pytest.raises(IndexError):
        Stack().peek()
