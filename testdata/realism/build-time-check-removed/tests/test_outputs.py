import json
import subprocess
from pathlib import Path


def test_report_exists():
    assert Path("/app/out/report.json").exists()


def test_report_totals():
    data = json.loads(Path("/app/out/report.json").read_text())
    assert data["total"] == sum(r["amount"] for r in data["rows"])


def test_cli_exit_code():
    r = subprocess.run(["python3", "/app/ledger/cli.py", "--check"], capture_output=True)
    assert r.returncode == 0
