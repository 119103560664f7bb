"""GitHub Actions as the engine: what the composite `action.yml` at the repository root and the
reusable workflow `.github/workflows/goals.yml` run on a runner (`goal action ...`).

The YAML only installs the package and calls these; everything that decides lives here, where it
can be tested without GitHub. A runner talks to us through environment variables (the inputs,
``RUNNER_TEMP``, ``GITHUB_*``) and answers through the files it names (envfiles.py).
"""
