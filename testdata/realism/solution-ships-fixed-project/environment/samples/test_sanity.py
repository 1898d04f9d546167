from engine.buffer.ring import Ring


def test_new():
    assert Ring(2).items == []
