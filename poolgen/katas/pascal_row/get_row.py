def __FN__(__A__: int) -> list:
    row = [1]
    for _ in range(__A__ - 1):
        row = [a + b for a, b in zip([0] + row, row + [0])]
    return row
