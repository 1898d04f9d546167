from ledger.parser import parse_line


def test_amount():
    assert parse_line("2024-01-02,x,1.25").amount == 1.25
