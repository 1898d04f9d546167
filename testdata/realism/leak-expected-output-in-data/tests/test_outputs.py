import json


def test_report():
    assert json.load(open('/app/out/report.json')) == json.load(open('/tests/expected_report.json'))
