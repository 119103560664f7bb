"""Tamper evidence: a keyed digest (HMAC-SHA256) over the goal files and baseline manifests we write.

A maker has the same user as goal-convergence, so it can edit any file under the home and recompute
any plain hash (the old `contract` hash was one). It cannot make a seal without the key in
``<home>/seal.key``: 32 random bytes, created once (a hard link that fails if the file exists), 0600,
never printed or logged. A document's seal is the last key of its JSON, ``"seal": {"mac": ...}``,
over the document's text as the store writes it (Python's JSON encoder, key order kept: one form for
one document) and the file's name under the home, so a sealed file copied over another one does not
pass either.

Files written before the key existed carry no seal. When the key is created, the sha256 of every
goal file and manifest there is then is kept in ``seal.json`` (sealed too): such a file is allowed
unsealed as long as its bytes are those, and is sealed at its next write. Any other unsealed file
is tampered, so a maker cannot strip a seal to pass as an old goal. A key made again over sealed
files (the old one deleted or replaced) allows no unsealed file, and the files sealed with the old
key are named in ``seal.json`` as sealed under a lost key: tampered, never silently accepted.

Each goal's terms (what it holds the maker to) are also kept in ``terms/<goalId>.json``, sealed,
and written only when they legitimately change (the store writes them), so that a tampered goal can
be told what changed and given back its terms. Standard library only: `goal list` and the hooks'
fast path verify seals without the models.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import time
from pathlib import Path
from typing import Any

from . import files

KEY = "seal.key"
STATE = "seal.json"
FIELD = "seal"
KEY_BYTES = 32
# What a goal holds its maker to. Each is set when the goal is made and changed only by a person's
# command (goal run ID --flags, resume with a raised budget, a triage action), so an edit of any
# of them outside goal-convergence is named field by field.
TERMS = ("objective", "stoppingConditions", "oracle", "budget", "protect", "testsMayChange", "projectRoot",
         "minConfidence", "stuckAfter", "baseline", "baseCommit", "baseTree")


def dumps(doc: Any) -> str:
    """The form a document is sealed in: how the store writes it (files.write_json), key order kept."""
    return json.dumps(doc, ensure_ascii=False, allow_nan=False)


def _mac(key: bytes, name: str, *parts: str) -> str:
    digest = hmac.new(key, name.encode(), hashlib.sha256)
    for part in parts:
        digest.update(b"\0" + part.encode("utf-8"))
    return digest.hexdigest()


def mac_of_bytes(root: Path, name: str, *parts: bytes) -> str:
    """The home's keyed digest of files we write whole but not as JSON (a goal's index of the tree)."""
    digest = hmac.new(key(root), name.encode(), hashlib.sha256)
    for part in parts:
        digest.update(len(part).to_bytes(8, "big") + part)
    return digest.hexdigest()


# ---- the key ----------------------------------------------------------------------------------


def key(root: Path) -> bytes:
    """The home's key, made (once, under a lock) when there is none."""
    found = _read_key(root)
    if found is not None:
        return found
    with files.lock(root, root / KEY):
        return _read_key(root) or _create(root)


def _read_key(root: Path) -> bytes | None:
    try:
        with open(root / KEY, "rb") as fh:
            data = fh.read(KEY_BYTES + 1)
    except FileNotFoundError:
        return None
    return data if len(data) == KEY_BYTES else None  # a truncated or padded key is no key of ours


def _create(root: Path) -> bytes:
    """A new key, and ``seal.json``: the unsealed files there are now (allowed while unchanged) unless
    a key existed before, and the files sealed with a key that is gone."""
    files.folder(root, "goals")  # the home too, 0700 when we make it
    previous = (root / KEY).exists() or (root / STATE).exists()
    legacy, orphans = {}, []
    for folder in ("goals", "baselines"):
        for path in sorted((root / folder).glob("goal-*.json")) if (root / folder).is_dir() else []:
            try:
                data = path.read_bytes()
                doc = files.parse_json(data.decode("utf-8"))
            except (OSError, ValueError, RecursionError):
                doc = None  # unreadable: allowed only as it is, like any other file from before
            if isinstance(doc, dict) and FIELD in doc:
                orphans.append(f"{folder}/{path.name}")
            else:
                legacy[f"{folder}/{path.name}"] = hashlib.sha256(data).hexdigest()
    previous = previous or bool(orphans)
    new = secrets.token_bytes(KEY_BYTES)
    state = {"createdAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "replaced": previous,
             "legacy": {} if previous else legacy, "orphans": orphans}
    files.write_atomic(root / STATE, (seal(root, STATE, state, new) + "\n").encode())
    # Written whole beside it, then linked into place: the link fails if a key is there, and a reader
    # never sees a key file half written.
    tmp = root / f".{KEY}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(new)
            fh.flush()
            os.fsync(fh.fileno())
        with contextlib.suppress(FileNotFoundError):
            (root / KEY).unlink()  # a key of the wrong size (see _read_key), kept by nothing
        os.link(tmp, root / KEY)
    finally:
        tmp.unlink(missing_ok=True)
    return new


def _state(root: Path) -> dict[str, Any]:
    """``seal.json`` when its seal holds, else as if it allowed nothing."""
    try:
        text = (root / STATE).read_text(encoding="utf-8")
        doc = files.parse_json(text)
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(doc, dict) or check(root, STATE, text, doc) is not None:
        return {}
    sealed(doc)
    return doc


def retire(root: Path, name: str) -> None:
    """A file from before the seal was just sealed: its old bytes are allowed no more (else a maker
    could put them back, or edit them back to them)."""
    with files.lock(root, root / STATE):
        state = _state(root)
        if name in state.get("legacy", {}):
            del state["legacy"][name]
            files.write_atomic(root / STATE, (seal(root, STATE, state) + "\n").encode())


# ---- sealing and checking any document --------------------------------------------------------


def seal(root: Path, name: str, doc: dict[str, Any], with_key: bytes | None = None,
         extra: dict[str, Any] | None = None) -> str:
    """The text of ``doc`` with its seal: ``name`` is its path under the home (goals/goal-x.json).
    ``extra`` goes in the seal, sealed with the document (a tampered goal's note, see store.py)."""
    body = dumps(doc)
    kept = dumps(extra or {})
    mac = _mac(with_key or key(root), name, body, kept)
    return f'{body[:-1]}, "{FIELD}": {{{kept[1:-1]}{", " if extra else ""}"mac": "{mac}"}}}}'


def check(root: Path, name: str, text: str, doc: Any) -> str | None:
    """Why ``doc`` (parsed from ``text``, the file at ``name`` under the home) is not as we sealed it,
    or None. Takes the seal out of ``doc``; what else the seal held is left in ``doc["seal"]``'s place
    as ``sealed(doc)`` gives it."""
    if not isinstance(doc, dict):
        return "it is not a JSON object"
    found = doc.pop(FIELD, None)
    if found is None:
        key(root)  # made now if it is not yet, with the list of the files from before it
        allowed = _state(root).get("legacy", {}).get(name)
        if allowed is not None and hmac.compare_digest(allowed, hashlib.sha256(text.encode()).hexdigest()):
            return None
        return "it has no seal: written or rewritten outside goal-convergence, or its seal was removed"
    mac = found.pop("mac", None) if isinstance(found, dict) else None
    if not isinstance(mac, str):
        return "its seal is malformed"
    # The document as it was sealed is the text before its seal, whose own text is known: no need to
    # encode a goal of 1,000 iterations again. Any other layout is an edit.
    tail = f', "{FIELD}": {dumps({**found, "mac": mac})}}}'
    text = text.rstrip("\n")
    body = text[:-len(tail)] + "}" if text.endswith(tail) else ""
    if not hmac.compare_digest(mac, _mac(key(root), name, body, dumps(found))):
        if name in _state(root).get("orphans", ()):
            return "it was sealed with a seal key that was deleted or replaced since"
        return "it was edited outside goal-convergence (its seal no longer matches)"
    doc[_EXTRA] = found
    return None


_EXTRA = " sealed"  # no camelCase key of a document has a space: where check() leaves what the seal held


def seal_of(doc: dict[str, Any]) -> Any:
    return doc.get(FIELD)


def sealed(doc: dict[str, Any]) -> dict[str, Any]:
    """What the seal of a checked document held besides its mac (taken out of ``doc``)."""
    return doc.pop(_EXTRA, {})


# ---- a goal's terms ---------------------------------------------------------------------------


def terms(goal_doc: dict[str, Any]) -> dict[str, Any]:
    return {k: goal_doc.get(k) for k in TERMS}


def _terms_name(goal_id: str) -> str:
    return f"terms/{goal_id}.json"


def write_terms(root: Path, goal_id: str, goal_doc: dict[str, Any]) -> None:
    """Keep the terms of a goal just written by us, when they are not already what is kept."""
    doc = {"goalId": goal_id, "terms": terms(goal_doc)}
    path = files.folder(root, "terms") / f"{goal_id}.json"
    text = seal(root, _terms_name(goal_id), doc)
    with contextlib.suppress(OSError):
        if path.read_text(encoding="utf-8") == text:
            return
    files.write_atomic(path, text.encode())


def sealed_terms(root: Path, goal_id: str) -> dict[str, Any] | None:
    """The goal's terms as we last wrote them, or None when they are missing or not sealed by us."""
    try:
        text = (root / _terms_name(goal_id)).read_text(encoding="utf-8")
        doc = files.parse_json(text)
    except (OSError, ValueError, RecursionError):
        return None
    if check(root, _terms_name(goal_id), text, doc) is not None:
        return None
    sealed(doc)
    return doc.get("terms") if isinstance(doc.get("terms"), dict) else None


def differences(before: Any, after: Any, at: str = "") -> list[str]:
    """Each leaf that differs, as ``oracle.provider: anthropic → conditions``."""
    if isinstance(before, dict) and isinstance(after, dict):
        return [d for k in dict.fromkeys([*before, *after])
                for d in differences(before.get(k), after.get(k), f"{at}.{k}" if at else k)]
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [d for n, (b, a) in enumerate(zip(before, after, strict=True)) for d in differences(b, a, f"{at}[{n}]")]
    if before == after:
        return []
    return [f"{at}: {_short(before)} → {_short(after)}"]


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."


def goal_problem(root: Path, goal_id: str, text: str, doc: Any) -> str | None:
    """Why the goal file (``text``, parsed as ``doc``) cannot be trusted, naming what changed when
    its sealed terms can tell, or None. Takes the seal out of ``doc``; a goal that a tampered load
    wrote back keeps its note in the seal (see store.py), and is tampered still."""
    if not isinstance(doc, dict):
        return None  # not a goal at all: the caller's validation says so
    unsealed = seal_of(doc) is None
    problem = check(root, f"goals/{goal_id}.json", text, doc)
    if problem is None:
        problem = sealed(doc).get("tampered")
        if problem is not None:
            return str(problem)
    # A file from before the seal is trusted as it was then, but for a claim no loop of ours makes.
    if problem is None and unsealed and doc.get("state") == "converged" and not any(
            isinstance(it, dict) and (it.get("decision") or {}).get("action") == "converge"
            for it in doc.get("history") or []):
        problem = "it says converged, but records no converging iteration"
    if problem is None:
        return None
    kept = sealed_terms(root, goal_id)
    if kept is None:
        return f"the goal file: {problem}; its sealed terms are missing, so what changed cannot be named"
    changed = differences(kept, terms(doc))
    if changed:
        return f"the goal file: {problem}; changed: {'; '.join(changed)}"
    return f"the goal file: {problem}; its terms are as sealed, so its state, counters or history were edited"
