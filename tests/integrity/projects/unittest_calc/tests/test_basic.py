import unittest

import calc


class TestBasic(unittest.TestCase):
    def test_add(self):
        self.assertEqual(calc.add(2, 3), 5)

    def test_add_rejects_strings(self):
        with self.assertRaises(TypeError):
            calc.add("2", 3)

    def test_mul(self):
        self.assertEqual(calc.mul(4, 3), 12)

    def test_div(self):
        self.assertEqual(calc.div(7, 2), 3.5)

    def test_div_by_zero(self):
        with self.assertRaises(ZeroDivisionError):
            calc.div(1, 0)

    def test_mean_empty(self):
        with self.assertRaises(ValueError):
            calc.mean([])


if __name__ == "__main__":
    unittest.main()
