#!/bin/sh
# Gemini CLI runs this for each of goal-convergence's hooks: `goal hook gemini <event>`, the hook's JSON on stdin.
# Without the goal CLI it answers {} and says why once a session, at its start: a hook must not break the session
# (a failing command would deny every tool call and every stop).
if command -v goal >/dev/null 2>&1; then
  exec goal hook gemini "$1"
fi
cat >/dev/null
if [ "$1" = session-start ]; then
  echo '{"systemMessage": "goal-convergence: the goal CLI is not on PATH, so goals are not checked in this session; install it: pip install goal-convergence"}'
else
  echo '{}'
fi
