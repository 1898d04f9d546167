import subprocess


def test_proxy():
    out = subprocess.run(["curl", "-s", "localhost/api/health"], capture_output=True, text=True).stdout
    assert "ok" in out
