"""Text cut to fit: in a line a person reads (``clip``), and in what a model reads (``cut``), which
says how much was left out so that the model does not take the rest for the whole."""

from __future__ import annotations


def plural(n: int, noun: str) -> str:
    """``1 iteration``, ``2 iterations``: a count a person reads, never ``iteration(s)``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def money(dollars: float) -> str:
    return f"${dollars:.4f}" if dollars < 1 else f"${dollars:.2f}"


def state_words(state: str, stop_reason: str | None) -> str:
    """``converged``, ``escalated (stuck)``: the stop reason only where it says more than the state."""
    return f"{state} ({stop_reason})" if stop_reason and stop_reason != state else state


def clip(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters; an ellipsis marks a cut."""
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def cut(text: str | None, limit: int, head: int | None = None) -> str | None:
    """At most ``limit`` characters, with a note of how many were cut. Without ``head`` the beginning
    is kept; with it, the first ``head`` characters and the rest from the end, which is where runners
    and makers put their summaries."""
    if text is None or len(text) <= limit:
        return text
    if limit <= 0:
        return ""
    if head is None:
        note = f"\n... ({len(text) - limit} more characters cut)"
        return text[: max(0, limit - len(note))] + note
    marker = f"\n... ({len(text) - limit} characters cut) ...\n"
    keep = max(0, limit - len(marker))
    first = min(head, keep)
    return text[:first] + marker + text[len(text) - (keep - first):]
