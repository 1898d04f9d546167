import sys
from ledger.parser import parse_line

if __name__ == "__main__":
    sys.exit(0)
