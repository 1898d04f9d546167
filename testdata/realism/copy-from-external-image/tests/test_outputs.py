from pathlib import Path


def test_lock():
    assert Path("/app/uv.lock").exists()
