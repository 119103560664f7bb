"""Claude Code's side of goal-convergence: its hooks, slash commands, transcripts and print mode.

Nothing is imported here: the hooks' fast path (fast.py) must cost no more than the standard library.
"""
