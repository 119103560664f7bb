#!/usr/bin/env bash
# The project's test entry point.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m unittest discover -s tests -t . "$@"
