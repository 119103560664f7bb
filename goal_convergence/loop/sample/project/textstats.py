"""Word and sentence statistics for a piece of text: the sample project of `goal demo`, with two bugs."""


def words(text: str) -> list[str]:
    return text.split(" ")


def word_count(text: str) -> int:
    return len(words(text))


def average_word_length(text: str) -> float:
    found = words(text)
    return sum(len(w) for w in found) / len(found) if found else 0.0


def sentence_count(text: str) -> int:
    return text.count(".")
