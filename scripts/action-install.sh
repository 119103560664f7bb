#!/usr/bin/env bash
# The GitHub Actions' install step (action.yml, plan/action.yml, summary/action.yml): the package from
# the action's own checkout ($1) into a venv under RUNNER_TEMP, whose bin goes on PATH for the steps
# after. A venv because the runners' system Python refuses pip installs (PEP 668).
set -euo pipefail
source_dir=$1
venv="$RUNNER_TEMP/goal-convergence-venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$source_dir"
echo "$venv/bin" >> "$GITHUB_PATH"
"$venv/bin/goal" --version
