"""OpenAI Codex CLI's side of goal-convergence: its hooks, its `$goal` skill, its rollout files and `codex exec`.

A thin adapter: Codex's hook input becomes the fields the Claude Code hooks already use, the loop runs
the same code, and the answer is put in Codex's output contract. Nothing is imported here: the hooks'
fast path (fast.py) must cost no more than the standard library.
"""
