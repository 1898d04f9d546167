def __FN__(__A__: str, __B__: str) -> int:
    dp = [[0] * (len(__B__) + 1) for _ in range(len(__A__) + 1)]
    for i in range(1, len(__A__) + 1):
        for j in range(1, len(__B__) + 1):
            if __A__[i - 1].lower() == __B__[j - 1].lower():
                dp[i][j] = dp[i - 1][j - 1] + 1
            else:
                dp[i][j] = max(dp[i - 1][j], dp[i][j - 1])
    return dp[len(__A__)][len(__B__)]
