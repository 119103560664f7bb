import unittest

import calc


class TestCalc(unittest.TestCase):
    def test_sub(self):
        self.assertEqual(calc.sub(5, 3), 2)

    def test_sub_negative(self):
        self.assertEqual(calc.sub(2, 5), -3)

    def test_mean(self):
        self.assertEqual(calc.mean([1, 2, 3, 6]), 3)


if __name__ == "__main__":
    unittest.main()
