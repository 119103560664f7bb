"""Text cut to fit: in a line a person reads (``clip``), and in what a model reads (``cut``), which
says how much was left out so that the model does not take the rest for the whole."""

from __future__ import annotations

import math


def plural(n: int, noun: str) -> str:
    """``1 iteration``, ``2 iterations``: a count a person reads, never ``iteration(s)``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def money(dollars: float) -> str:
    """Every amount of money a person reads, in cents (``$0.00``, ``$12.35``); below a cent, with the digits
    it takes to show two significant ones (``$0.0042``), so a cheap call is not shown as free. Floor:
    ``<$0.000001``."""
    if dollars < 0:
        return "-" + money(-dollars)
    if dollars == 0 or dollars >= 0.01:
        return f"${dollars:.2f}"
    if dollars < 0.000001:
        return "<$0.000001"
    return "$" + f"{dollars:.{1 - math.floor(math.log10(dollars))}f}".rstrip("0")


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
