import json
import sys

sys.path.insert(0, "/app")
from schema import validate


def test_hidden_invalid():
    assert not validate({"name": 3})
