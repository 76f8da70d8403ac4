"""Short, deterministic, tabular views of what a lab did: what a student reads in a notebook.

Random values never reach the page: cursors are shown as stable labels (``c1``, ``c2`` …
in order of first appearance; the empty string stays ``""``).
"""
from __future__ import annotations

import json
from typing import Any, Iterable, Sequence


class Table:
    """A plain-text table; notebooks display it as its text."""

    def __init__(self, columns: Sequence[str], rows: Iterable[Sequence[Any]], title: str | None = None):
        self.columns = list(columns)
        self.rows = [["" if v is None else str(v) for v in row] for row in rows]
        self.title = title

    def text(self) -> str:
        widths = [len(c) for c in self.columns]
        for row in self.rows:
            widths = [max(w, len(v)) for w, v in zip(widths, row)]
        def line(values):
            return "  ".join(v.ljust(w) for v, w in zip(values, widths)).rstrip()
        out = [self.title] if self.title else []
        out += [line(self.columns), line(["-" * w for w in widths])]
        out += [line(row) for row in self.rows]
        return "\n".join(out)

    def __repr__(self) -> str:
        return self.text()

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(self.text())


class CursorLabels:
    """Maps opaque cursors to short stable labels for display."""

    def __init__(self):
        self._labels: dict[str, str] = {}

    def __call__(self, cursor: str | None) -> str:
        if cursor is None:
            return "None"
        if cursor == "":
            return '""'
        if cursor not in self._labels:
            self._labels[cursor] = f"c{len(self._labels) + 1}"
        return self._labels[cursor]


def _summary(message: dict, label: CursorLabels) -> str:
    """One short line describing a JSON-RPC message."""
    if "method" in message:
        params = message.get("params") or {}
        parts = []
        if "cursor" in params:
            parts.append(f"cursor={label(params['cursor'])}")
        for key in ("name", "uri", "protocolVersion"):
            if key in params:
                parts.append(f"{key}={params[key]}")
        if "inputResponses" in params:
            parts.append(f"inputResponses={sorted(params['inputResponses'])}")
        if "requestState" in params:
            parts.append("+requestState")
        if "_meta" in params:
            parts.append("+envelope")
        return " ".join(parts)
    if "error" in message:
        err = message["error"]
        return f"error {err.get('code')}: {err.get('message')}"
    result = message.get("result") or {}
    parts = []
    for key in ("tools", "resources", "resourceTemplates", "prompts", "contents", "messages"):
        if key in result:
            names = [x.get("name") or x.get("uri") or x.get("uriTemplate") or x.get("role") for x in result[key]]
            parts.append(f"{key}={names}" if len(names) <= 4 else f"{key}=[{len(names)} items]")
    if "nextCursor" in result:
        parts.append(f"nextCursor={label(result['nextCursor'])}")
    if "protocolVersion" in result:
        parts.append(f"protocolVersion={result['protocolVersion']}")
    if result.get("resultType") == "input_required":
        parts.append(f"input_required inputRequests={sorted(result.get('inputRequests') or {})}")
    if "content" in result:
        texts = [c.get("text") for c in result["content"] if c.get("type") == "text"]
        parts.append(f"content={texts}")
    return " ".join(parts) or "ok"


def wire_table(wire, *, title: str | None = None, limit: int | None = None) -> Table:
    """The wire transcript of a lab as a table: one frame a row, both directions, in order."""
    label = CursorLabels()
    rows = []
    for frame in wire:
        m = frame.message
        if m is None:
            rows.append([frame.index, frame.direction, "noise", "", frame.raw[:60]])
            continue
        rows.append([frame.index, frame.direction, frame.kind, m.get("method", f"id={m.get('id')}"),
                     _summary(m, label)])
    if limit is not None:
        rows = rows[:limit]
    return Table(["#", "dir", "kind", "method / id", "summary"], rows, title)


def frame_json(frame, *, hide: Sequence[str] = ("cursor", "nextCursor")) -> str:
    """One frame as indented JSON, with cursor values replaced by a placeholder."""
    def scrub(value):
        if isinstance(value, dict):
            return {k: ("<cursor>" if k in hide and isinstance(v, str) and v else scrub(v)) for k, v in value.items()}
        if isinstance(value, list):
            return [scrub(v) for v in value]
        return value
    return json.dumps(scrub(frame.message), indent=1, ensure_ascii=False)


def error_line(exc: BaseException) -> str:
    """``Type(reason): message`` or ``MCPError -32602: message`` — one line, no traceback."""
    error = getattr(exc, "error", None)
    if error is not None and hasattr(error, "code"):
        return f"MCPError {error.code}: {error.message}"
    reason = getattr(exc, "reason", None)
    return f"{type(exc).__name__}({reason}): {exc}" if reason else f"{type(exc).__name__}: {exc}"
