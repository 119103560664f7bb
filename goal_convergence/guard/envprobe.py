"""The probe environment.py runs in a condition's interpreter: it prints, as one JSON line, where that
interpreter looks for code (its import path and site folders) and, when pytest is there, pytest's own
view of the project's configuration (rootdir and config file), without collecting any test.

It only says *where*: what is found there (.pth files, distributions, entry points, the runner's files)
is read by the guard's own process, so a ``.pth`` planted to fool the probe cannot hide itself.
It is run as ``python -c <this file's source>`` with the project root as cwd, so it must run on any
Python 3 the project uses, with the standard library alone.
"""

import sys


def _site_folders(os, site):
    found = list(getattr(site, "getsitepackages", lambda: [])())
    if getattr(site, "ENABLE_USER_SITE", False):
        found.append(site.getusersitepackages())
    return [f for f in found if os.path.isdir(f)]


def _pytest_view():
    """pytest's rootdir and config file for a run in the cwd with no arguments (None without pytest)."""
    try:
        import inspect
        from pathlib import Path

        from _pytest.config import findpaths
    except Exception:
        return None
    try:
        accepted = inspect.signature(findpaths.determine_setup).parameters
        given = {"inifile": None, "override_ini": None, "args": [], "rootdir_cmd_arg": None,
                 "invocation_dir": Path.cwd(), "config": None}
        found = findpaths.determine_setup(**{k: v for k, v in given.items() if k in accepted})
        return {"rootdir": str(found[0]), "inifile": str(found[1]) if found[1] else None}
    except Exception as exc:  # an odd pytest: say so rather than fail the whole probe
        return {"error": "%s: %s" % (type(exc).__name__, exc)}


def main():
    # `-c` puts the cwd (the project root) first on the path: a json.py there must not answer for us.
    seen = list(sys.path)
    sys.path[:] = [p for p in sys.path[1:] if p]
    import json
    import os
    import site

    print(json.dumps({
        "executable": sys.executable,
        "version": sys.version.split()[0],
        "prefix": sys.prefix,
        "path": [p or os.getcwd() for p in seen],
        "site": _site_folders(os, site),
        "pytest": _pytest_view(),
    }))


if __name__ == "__main__":
    main()
