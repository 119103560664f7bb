"""goal-convergence: keep a coding agent working until real checks pass and an oracle agrees."""

__version__ = "0.1.0"
