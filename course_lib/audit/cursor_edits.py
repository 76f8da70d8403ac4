"""Well-formed edits of an issued cursor, for the tamper probe: what a client (or an attacker) can
make of a cursor that is not signed.

A cursor the audit can read (a plain number, or base64 / base64url JSON: a number or an object) is
edited and written back in its own spelling: a number changed by one, a field changed, and another
list's cursor sent in its place. A cursor it cannot read (signed, encrypted, or opaque) gets its
last character changed, as any edit of an opaque token would be.
"""
from __future__ import annotations

import base64
import binascii
import json


def _read(cursor: str):
    """``(value, write)``: the cursor's JSON value and how to write an edited value back; None if opaque."""
    if cursor.isdigit():
        return int(cursor), str
    url = "-" in cursor or "_" in cursor
    try:
        raw = base64.b64decode(cursor + "=" * (-len(cursor) % 4), altchars=b"-_" if url else None, validate=True)
        value = json.loads(raw)
    except (binascii.Error, ValueError):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, dict)):
        return None
    separators = (", ", ": ") if b": " in raw or b", " in raw else (",", ":")

    def write(edited) -> str:
        text = base64.b64encode(json.dumps(edited, separators=separators).encode(), altchars=b"-_" if url else None)
        return text.decode() if cursor.endswith("=") else text.decode().rstrip("=")

    return value, write


def _last_character(cursor: str) -> str:
    return cursor[:-1] + ("B" if cursor[-1] == "A" else "A")


OPAQUE = "an issued cursor with its last character changed (it cannot be read)"


def edits(cursor: str, others: list[str] = ()) -> list[tuple[str, str]]:
    """``[(what was edited, the edited cursor)]`` for a non-empty ``cursor``; ``others``: cursors of
    the server's other lists. Every edit but ``OPAQUE`` is well-formed: a cursor the server could
    have issued, unless it binds its cursors to what it issued."""
    read = _read(cursor)
    out = []
    if read is None:
        out.append((OPAQUE, _last_character(cursor)))
    else:
        value, write = read
        if isinstance(value, int):
            out.append((f"the cursor's number {value} changed to {value + 1}", write(value + 1)))
        else:
            numbers = [k for k, v in value.items() if isinstance(v, int) and not isinstance(v, bool)]
            if numbers:
                key = numbers[0]
                out.append((f"the cursor's field {key!r} changed from {value[key]} to {value[key] + 1}",
                            write({**value, key: value[key] + 1})))
            texts = [k for k, v in value.items() if isinstance(v, str)]
            if texts:
                out.append((f"the cursor's field {texts[0]!r} changed", write({**value, texts[0]: value[texts[0]] + "x"})))
            elif value:
                key = next(iter(value))
                out.append((f"the cursor's field {key!r} renamed", write({f"{key}x" if k == key else k: v
                                                                           for k, v in value.items()})))
    other = next((c for c in others if c and c != cursor), None)
    if other is not None:
        out.append(("a cursor another list of this server issued", other))
    return [(what, value) for what, value in out if value != cursor]


__all__ = ["OPAQUE", "edits"]
