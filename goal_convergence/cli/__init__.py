"""The `goal` command line: the click group and the exit codes (app.py), the flags a goal is described by
(options.py), one module a subcommand (commands/, which the slash command calls too) and what they print
through (output.py)."""
