import subprocess


def test_ctest():
    r = subprocess.run(["ctest", "--output-on-failure"], cwd="/app/build")
    assert r.returncode == 0
