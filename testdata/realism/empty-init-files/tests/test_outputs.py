import sys
sys.path.insert(0, "/app")
import pkg.core


def test_add():
    assert pkg.core.add(2, 40) == 42
