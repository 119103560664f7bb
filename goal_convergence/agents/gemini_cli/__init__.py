"""Gemini CLI's side of goal-convergence: an adapter from its hooks to the loop Claude Code's hooks run, its
chat recordings' meter, and its headless mode as a maker.

Nothing is imported here: the hooks' fast path (fast.py) must cost no more than the standard library.
"""
