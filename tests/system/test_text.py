"""Text cut to fit, for a person and for a model."""

from __future__ import annotations

import json

import pytest

from goal_convergence.system.text import UNSAFE, clip, cut, json_escaped, terminal_safe


@pytest.mark.parametrize(("text", "width", "shown"), [("short", 10, "short"), ("exactly10!", 10, "exactly10!"),
                                                      ("eleven char", 10, "eleven ch…"), ("abc", 0, "…")])
def test_clip_fits_the_width_and_marks_a_cut(text, width, shown):
    assert clip(text, width) == shown


def test_cut_keeps_the_beginning_and_says_how_much_is_gone():
    text = "x" * 1000
    kept = cut(text, 100)
    assert len(kept) == 100 and kept.startswith("x") and kept.endswith("(900 more characters cut)")
    assert cut("small", 100) == "small" and cut(None, 10) is None and cut(text, 0) == ""


def test_cut_with_a_head_keeps_both_ends():
    text = "HEAD" + "m" * 1000 + "TAIL"
    kept = cut(text, 200, head=4)
    assert len(kept) == 200 and kept.startswith("HEAD\n... (808 characters cut) ...\n") and kept.endswith("TAIL")
    assert cut(text, 200, head=0).endswith("mTAIL") and not cut(text, 200, head=0).startswith("HEAD")


@pytest.mark.parametrize(("raw", "shown"), [
    ("\x1b]0;title\x07", "␛]0;title␇"), ("\x1b]52;c;ZXZpbA==\x1b\\", "␛]52;c;ZXZpbA==␛\\"), ("\x1b[2J", "␛[2J"),
    ("a\x08b", "a␈b"), ("over\rwrite", "over␍write"), ("line\r\n", "line\n"), ("\x9b31m", "<U+009B>31m"),
    ("\u202eevil", "<U+202E>evil"), ("\u2067x\u2069", "<U+2067>x<U+2069>"), ("\x7f", "␡"), ("\x00", "␀"),
    ("tab\tand\nnewline é ✓", "tab\tand\nnewline é ✓")])
def test_terminal_safe_neutralises_every_control_and_keeps_text(raw, shown):
    assert terminal_safe(raw) == shown


def test_json_escaped_keeps_the_document_and_leaves_nothing_raw():
    doc = {"k": "\x9b\u202e\x7f\x1b é"}
    text = json_escaped(json.dumps(doc, ensure_ascii=False))
    assert json.loads(text) == doc and not set(text) & UNSAFE
