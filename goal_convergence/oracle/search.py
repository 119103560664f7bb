"""The oracle's grep, run as a child process (``python -I search.py``) under a timeout: a regular
expression can backtrack for ever inside one line (``(a|aa)*c``), and Python's ``re`` cannot be
interrupted, so the process is what gets stopped. Standard library only, so the child starts fast.

Reads a job as JSON on stdin (the pattern, the files as [path, relative path] already checked by
the toolbox, the caps) and prints ``rel:line: text`` for each match as it is found, so what was
found before a timeout is not lost.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys


def main() -> int:
    job = json.load(sys.stdin)
    regex = re.compile(job["pattern"])
    found = 0
    for path, rel in job["files"]:
        try:  # not through a symlink swapped in since the toolbox checked the path; never a FIFO's wait
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            data = fh.read(job["max_file_bytes"] + 1)
        if len(data) > job["max_file_bytes"] or b"\0" in data[:8192]:
            continue
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if regex.search(line[:job["max_search_chars"]]):
                print(f"{rel}:{number}: {line.strip()[:job['max_line_chars']]}", flush=True)
                found += 1
                if found >= job["max_matches"]:
                    print(f"... (stopped at {job['max_matches']} matches)", flush=True)
                    return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
