from stats import rolling_median


def test_odd_window():
    assert rolling_median([5, 1, 3, 2, 4], 3) == [3, 2, 3]


def test_even_window():
    assert rolling_median([4, 1, 3, 2], 2) == [2.5, 2, 2.5]
