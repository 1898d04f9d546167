import subprocess


def run(lines):
    out = subprocess.run(["python3", "/app/semsort.py"], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_numeric_not_lexical():
    assert run(["1.10.0", "1.2.0", "1.9.3"])[0] == "1.2.0"


def test_prerelease_before_release():
    out = run(["2.0.0", "2.0.0-rc1", "1.0.0"])
    assert out.index("2.0.0-rc1") < out.index("2.0.0")
