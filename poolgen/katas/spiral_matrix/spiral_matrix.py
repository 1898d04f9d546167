def __FN__(__A__: int) -> list:
    grid = [[0] * __A__ for _ in range(__A__)]
    r, c, dr, dc = 0, 0, 0, 1
    for k in range(1, __A__ * __A__ + 1):
        grid[r][c] = k
        nr, nc = r + dr, c + dc
        if not (0 <= nr < __A__ and 0 <= nc < __A__ and grid[nr][nc] == 0):
            dr, dc = dc, -dr
            nr, nc = r + dr, c + dc
        r, c = nr, nc
    return grid
