from ledger.parser import parse_line


def test_parse_simple():
    assert parse_line("2024-01-02,coffee,3.50").amount == 3.5


def test_parse_quoted_comma():
    assert parse_line('2024-01-02,"tea, green",2.00').item == "tea, green"
