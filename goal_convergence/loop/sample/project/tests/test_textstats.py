"""The sample project's tests: unittest classes, which pytest runs too."""

import unittest

from textstats import average_word_length, sentence_count, word_count


class WordCount(unittest.TestCase):
    def test_counts_words(self):
        self.assertEqual(word_count("the quick brown fox"), 4)

    def test_extra_spaces_are_not_words(self):
        self.assertEqual(word_count("the  quick\tbrown fox "), 4)


class AverageWordLength(unittest.TestCase):
    def test_average(self):
        self.assertEqual(average_word_length("ab abcd"), 3.0)


class SentenceCount(unittest.TestCase):
    def test_full_stops(self):
        self.assertEqual(sentence_count("One. Two."), 2)

    def test_questions_and_exclamations_end_sentences_too(self):
        self.assertEqual(sentence_count("Hi! Is it? Yes."), 3)
