from engine.buffer.ring import Ring


def test_overwrite():
    r = Ring(2)
    for x in (1, 2, 3):
        r.put(x)
    assert r.items == [2, 3]
