"""One line of a Claude Code transcript, read for the message it bills without parsing its content.

A transcript is mostly tool results (a file read, a command's output) and message content: the
meter must not spend Python time on those bytes. A line is a span ``buf[start:end]`` of the block
it was read in, found by searching bytes, and:

- a line whose head says it is another kind of entry (Claude Code writes a user entry's
  ``"type":"user"`` among the leading scalar fields, before anything nested) is skipped unread;
- a line that may bill a message (it holds a ``"usage"`` and an ``"assistant"`` string) is parsed
  with its message's content cut out: the bytes from the line's start to the message's first nested
  value, ``null``, then the bytes from its ``"usage"`` key to the end. Claude Code writes the id and
  model before the content and the usage last, so those few hundred bytes hold every field read,
  and ``json.loads`` of them gives what it gives for the whole line.

The cut is made only when the line holds one ``"usage"`` key: a tool's input may hold one of its
own, and an object beside the message might end with one. A ``"usage"`` key inside the content or
in an object of its own is followed by the closing brackets of the values around it, more than the
cut line has open, so the cut line is not JSON and the line is parsed whole: the parse of the cut
line succeeds only for a ``"usage"`` key of the object the content is in. The line is also parsed
whole when the content does not start, or the usage does not end the line, within ``WINDOW`` bytes.
In JSON text a ``"`` inside a string is escaped, so ``"usage"`` found in the bytes is a key or a
whole string, never a message's words about usage. What the cut cannot see are keys repeated in
the content's place (``json.loads`` keeps the last) or a message without usage followed by an
object ending with the line's only ``"usage"``: Claude Code writes neither.

A line in Claude Code's own layout, nearly every line of a transcript, is read without the JSON
parser at all (transcript_scan.py): its head is compared with bytes the session's earlier lines
established (``PREFIX``: the scalar fields after ``parentUuid``, none of them a ``"type"``; then a
user's ``"type":"user"``, skipped, or the assistant's message opening with its model and id,
``HEAD``), and only the last line of a message's run has its tail matched (``billed``): from the
content's closing bracket to the end of the line, the message's last scalars, its usage (each count a
JSON integer), the message closed, then the entry's scalars with its type and timestamp. In a line that
is JSON, that tail can only be the message's own: the usage's object is closed by the one the
content's array is in, and the entry closes after it. What it cannot see is the same as above: keys
repeated in the content's place, or an object beside the message, after it, ending like a message
does. A line that does not match is read as above.
"""

from __future__ import annotations

import json
import re
from itertools import repeat
from operator import add, sub

WINDOW = 4096  # bytes of a line's head, and of its tail, read by the cheap path
# A message's lines come one after another, each with its usage so far: only the last of a run is
# parsed, the run told by the message id ("msg_..."), found without parsing. A line without one is
# parsed alone (transcript_scan.py).
_ID = re.compile(rb'"id":\s*"(msg_[^"\\]+)"')


def may_count(buf: bytes, start: int, end: int) -> bool:
    """Whether the line might bill a message: not when its head says it is another kind of entry
    (a user's, a summary), else when it holds both a ``"usage"`` and an ``"assistant"`` string
    (looked for from the end and from the start, where Claude Code writes them)."""
    at = buf.find(b'"type":', start, end if end - start < WINDOW else start + WINDOW)
    # The entry's own type: at the top level (nothing nested before it, 123 is "{"), its quote not
    # escaped (92 is a backslash), its value a string without escapes ("type": "user" as json.dumps writes it, too).
    if at > start and buf[start] == 123 and buf[at - 1] != 92 and buf.find(b"{", start + 1, at) < 0 \
            and buf.find(b"[", start + 1, at) < 0:
        value = at + 8 if buf[at + 7:at + 8] == b" " else at + 7
        close = buf.find(b'"', value + 1, end) if buf[value:value + 1] == b'"' else -1
        if close >= 0 and buf[value + 1:close] != b"assistant" and buf.find(b"\\", value + 1, close) < 0:
            return False
    return buf.rfind(b'"usage"', start, end) >= 0 and buf.find(b'"assistant"', start, end) >= 0


def message(buf: bytes, start: int, end: int) -> tuple[object, object, object, object] | None:
    """(message id, model, usage, timestamp) of an assistant entry, as ``json.loads`` of the line would
    give them, or None for a line that is not one."""
    if (entry := _cheap(buf, start, end)) is not None and (found := _fields(entry)) is not None:
        return found
    return _fields(_parse(buf[start:end]))


def _cheap(buf: bytes, start: int, end: int) -> dict | None:
    """The entry with its message's content cut out: the line from its start to the message's first
    nested value (the content), then ``null``, then from the line's only ``"usage"`` key to its end.
    None when the line has no such shape within ``WINDOW`` bytes of either end."""
    limit = end if end - start < WINDOW else start + WINDOW
    at = buf.find(b'"message"', start, limit)
    body = buf.find(b"{", at + 9, limit) + 1 if at >= 0 else 0
    inner = buf.find(b"[", body, limit) if body else -1
    if (brace := buf.find(b"{", body, inner if inner >= 0 else limit) if body else -1) >= 0:
        inner = brace
    usage = buf.rfind(b'"usage"', inner, end) if inner >= 0 else -1
    if usage < 0 or end - usage > WINDOW or buf.find(b'"usage"', start, usage) >= 0:
        return None
    # The entry's scalar fields before the message (session, folder, version) are left out too,
    # unless the type or the timestamp is among them.
    keep = at if buf[start] == 123 and _flat(buf, start + 1, at) and buf.find(b'"type"', start, at) < 0 \
        and buf.find(b'"timestamp"', start, at) < 0 else start  # 123: "{"
    return _parse(b"".join((b"{" if keep == at else b"", buf[keep:inner], b"null,", buf[usage:end])))


def message_id(buf: bytes, start: int, end: int) -> bytes | None:
    """``_ID.search`` of the line, its literal start found by ``bytes.find`` (the regex engine's own scan is slower)."""
    at = buf.find(b'"id":', start, end)
    while at >= 0:
        if found := _ID.match(buf, at, end):
            return found[1]
        at = buf.find(b'"id":', at + 1, end)
    return None


def _parse(text: bytes) -> dict | None:
    try:
        return json.loads(text.decode())  # str: json.loads would guess the encoding of bytes, line by line
    except ValueError:
        return None


def _fields(entry: object) -> tuple[object, object, object, object] | None:
    try:
        message = entry["message"]
        found = message["id"], message["model"], message["usage"], entry.get("timestamp")
    except (KeyError, TypeError):
        return None
    return found if entry.get("type") == "assistant" else None


def _flat(buf: bytes, start: int, end: int) -> bool:
    """No object or array opens in the span: it is all at one depth."""
    return buf.find(b"{", start, end) < 0 and buf.find(b"[", start, end) < 0


# Claude Code's own layout of an entry, read by matching bytes alone (transcript_scan.py). The
# head: the entry opens with its parentUuid, then scalar fields of the session (``PREFIX``: none of
# them a "type"), then either the user's ``"type":"user"`` or the assistant's message with its model
# and id before its content (``HEAD``; a model or id holding an escape is left to the JSON parser).
# A string is matched up to its first quote where that is the regex engine's fastest loop: in a line
# that is JSON, an escaped quote there would have to be followed by more of the pattern, which holds
# unescaped quotes, so a match ends where the string does.
PREFIX = re.compile(rb'\{"parentUuid":(?:null|"[^"\\]*")((?:,"(?!type")[^"\\]*":(?:"[^"\\]*"|true|false|null|-?[0-9]+))*,)'
                    rb'(?="message":\{"model":|"type":"user",)')
HEAD = re.compile(rb'"message":\{"model":"([^"]*)","id":"([^"]+)","type":"message","role":"assistant","content":\[')
# The tail: the content's closing bracket, the message's last scalars and its usage, then the entry's
# scalars to the end of the line, its type among them. Tails are matched many at once, one a line of
# their join (a line holds no newline): as many matches as tails, each starting at one, is each tail
# matched whole, since a match that ran on into the next tail would leave that one without its own.
_N = rb"(-?(?:0|[1-9][0-9]*+))"  # a JSON integer: what int() reads as json.loads does
_S = rb'"[^"]*+"'
_TAIL = re.compile(rb'^\],"stop_reason":(?:null|' + _S + rb'),"stop_sequence":(?:null|' + _S + rb'),"usage":\{'
                   rb'"input_tokens":' + _N + rb',"cache_creation_input_tokens":' + _N + rb',"cache_read_input_tokens":'
                   + _N + rb',"cache_creation":\{"ephemeral_5m_input_tokens":' + _N + rb',"ephemeral_1h_input_tokens":'
                   + _N + rb'\},"output_tokens":' + _N + rb',"service_tier":' + _S + rb'\}\},"requestId":' + _S
                   + rb',"type":"assistant","uuid":' + _S + rb',"timestamp":"([^"]*+)"\}[ \t\r]*+$', re.M)
# Where a tail starts: the line's last "]", the content's close in Claude Code's layout (one byte, found by
# memrchr; a "]" in a string after it leaves the tail unmatched, and the line to the JSON parser).
TAIL_START = b"]"
# A timestamp as Claude Code writes one (UTC, to the millisecond): two of them compare as their bytes do.
_ISO = rb"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z"
_STAMPS = re.compile(rb"(?:" + _ISO + rb"\n)*+" + _ISO)


def billed(tails: list[bytes]) -> tuple[tuple[list[int], ...], tuple[bytes, ...]] | None:
    """The ``cost.usage_counts`` (as five columns, one a kind of token) and the timestamp of each tail
    (from a line whose ``HEAD`` matched, its last ``TAIL_START`` to its end), when every one of them is
    Claude Code's: the usage the message ends with, the entry's type and timestamp after it. All are
    matched by one regex search and their counts worked out column by column: no Python step a tail."""
    found = _TAIL.findall(b"\n".join(tails))
    if len(found) != len(tails):
        return None
    tokens_in, total, read, w5m, w1h, out, stamps = zip(*found)
    zeros = (b"0",) * len(found)
    # Claude Code splits the cache-write total all to one duration: then the total is the other
    # column and needs no reading. Any other split is worked out as cost.usage_counts does.
    if w5m == zeros and total == w1h:
        w5m, w1h = [0] * len(found), [*map(int, w1h)]
    elif w1h == zeros and total == w5m:
        w5m, w1h = [*map(int, w5m)], [0] * len(found)
    else:
        total, w5m, w1h = ([*map(int, column)] for column in (total, w5m, w1h))
        # A cache-write total beyond its split counts as 5-minute writes.
        w5m = list(map(add, w5m, map(max, repeat(0), map(sub, total, map(add, w5m, w1h)))))
    return ([*map(int, tokens_in)], w5m, w1h, [*map(int, read)], [*map(int, out)]), stamps


def utc(stamps: tuple[bytes, ...]) -> bool:
    """Whether every timestamp is written as Claude Code writes one, so that they compare as their bytes do."""
    return _STAMPS.fullmatch(b"\n".join(stamps)) is not None
