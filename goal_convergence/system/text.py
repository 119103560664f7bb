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


# Characters a terminal acts on instead of showing: every C0 control but tab and newline (ESC starts CSI, OSC
# (a window title, OSC 52 the clipboard), DCS...; BEL, backspace and a lone CR overwrite what was shown), DEL,
# the C1 controls (0x9b is a CSI by itself, 0x9d an OSC), and the bidirectional overrides and isolates that
# show text in an order other than its own. Each becomes a visible stand-in, so that nothing is lost from
# sight either: C0 as its control picture (␛ for ESC), the rest as <U+XXXX>.
_C0 = {c: 0x2400 + c for c in range(0x20) if chr(c) not in "\t\n"}
_SHOWN = {**_C0, 0x7F: 0x2421,
          **{c: f"<U+{c:04X}>" for c in [*range(0x80, 0xA0), 0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F),
                                         *range(0x2066, 0x206A)]}}
UNSAFE = frozenset(chr(c) for c in _SHOWN)


def terminal_safe(text: str) -> str:
    """``text`` as it may be written to a terminal: the controls and escape sequences in it (``_SHOWN``)
    neutralised into visible stand-ins, a CRLF line end kept as a newline. Everything printed for a person
    goes through it (cli/output.py); JSON escapes the same characters its own way."""
    if text.isascii() and text.isprintable():
        return text  # the common case, at C speed
    return text.replace("\r\n", "\n").translate(_SHOWN)


def json_escaped(text: str) -> str:
    """JSON text with the characters ``terminal_safe`` neutralises that JSON leaves raw (C1, DEL, bidi) written as
    ``\\uXXXX`` escapes instead: the same document, safe on a terminal, exact for a program."""
    if text.isascii() and "\x7f" not in text:
        return text
    return "".join(f"\\u{ord(ch):04x}" if ch in UNSAFE else ch for ch in text)
