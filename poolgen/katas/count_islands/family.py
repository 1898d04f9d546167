def __FN__(__A__: list) -> int:
    rows = len(__A__)
    cols = len(__A__[0]) if rows else 0
    seen = [[False] * cols for _ in range(rows)]
    moves = MOVES
    count = 0
    for r in range(rows):
        for c in range(cols):
            if __A__[r][c] == 1 and not seen[r][c]:
                count += 1
                stack = [(r, c)]
                seen[r][c] = True
                while stack:
                    y, x = stack.pop()
                    for dy, dx in moves:
                        ny, nx = y + dy, x + dx
                        if 0 <= ny < rows and 0 <= nx < cols and __A__[ny][nx] == 1 and not seen[ny][nx]:
                            seen[ny][nx] = True
                            stack.append((ny, nx))
    return count
