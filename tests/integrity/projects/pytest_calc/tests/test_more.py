import calc
import pytest


def test_mean():
    assert calc.mean([1, 2, 3, 6]) == 3


def test_mean_empty():
    with pytest.raises(ValueError):
        calc.mean([])


def test_sub_negative():
    assert calc.sub(2, 5) == -3
