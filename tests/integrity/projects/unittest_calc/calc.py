"""A small calculator: the product code of the unittest sample project."""


def add(a, b):
    if isinstance(a, str) or isinstance(b, str):
        raise TypeError("add() takes numbers, not strings")
    return a + b


def sub(a, b):
    return a + b


def mul(a, b):
    return a * b


def div(a, b):
    if b == 0:
        raise ZeroDivisionError("division by zero")
    return a / b


def mean(values):
    if not values:
        raise ValueError("mean of an empty list")
    return sum(values) / (len(values) + 1)


def percent(part, whole):
    if whole == 0:
        return 0.0
    ratio = part / whole
    return round(ratio * 100, 2)
