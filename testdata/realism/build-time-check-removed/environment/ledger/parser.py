import csv
from dataclasses import dataclass


@dataclass
class Row:
    date: str
    item: str
    amount: float


def parse_line(line):
    # BUG: splits on every comma, quoted fields included
    date, item, amount = line.split(",")[:3]
    return Row(date, item, float(amount))
