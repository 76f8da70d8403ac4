"""Short, deterministic, tabular views of what a lab did: what a student reads in a notebook.

Random values never reach the page: cursors are shown as stable labels (``c1``, ``c2`` …
in order of first appearance; the empty string stays ``""``).
"""
from __future__ import annotations

import html
import json
import re
import textwrap
from typing import Any, Iterable, Sequence

WIDTH = 100          # a projector's line: the plain-text form of a table never needs more
MAX_CELL_LINES = 4   # a cell that needs more lines than this in its column goes under the table
GAP = "  "           # between two columns

# What a cell says, for the HTML form's highlighting: a verdict or a refusal (an error, a typed
# error, a refused or raised outcome).
_REFUSAL = re.compile(r"^(refused|raised|rejected|error\b|MCPError\b|-32\d{3}\b"
                      r"|[A-Z][A-Za-z]*(Error|Timeout|Crashed|Violation)\b)")
KIND_STYLES = {
    "pass": "background:#e6f4ea; color:#137333; font-weight:bold",
    "fail": "background:#fce8e6; color:#a50e0e; font-weight:bold",
    "refused": "background:#fef7e0; color:#7a4f01",
}
_CELL_STYLE = "padding:2px 8px; text-align:left; vertical-align:top; font-family:monospace"
_SHORT = 16     # a column whose cells are all this short never wraps in the HTML form
_MIN_WRAP = 30  # a wrapping column is at least this many characters wide (or its widest cell)


def cell_kind(value: str) -> str | None:
    """``pass``, ``fail``, ``refused`` or None: how the HTML form highlights a cell."""
    if value == "PASS" or value.startswith("PASS "):
        return "pass"
    if value == "FAIL" or value.startswith("FAIL "):
        return "fail"
    return "refused" if _REFUSAL.match(value) else None


def wrap_cell(value: str, width: int) -> list[str]:
    """A cell's lines in a column ``width`` characters wide.

    Words stay whole where they fit (a word longer than the column is cut), line breaks in
    the value are kept, and a part that already fits is left exactly as it is.
    """
    lines: list[str] = []
    for part in value.split("\n"):
        if len(part) <= width:
            lines.append(part)
        else:
            lines += textwrap.wrap(part, width, break_on_hyphens=False) or [""]
    return lines


def fit_widths(natural: Sequence[int], floors: Sequence[int], budget: int) -> list[int]:
    """Column widths whose sum fits ``budget``: the widest columns give way first.

    Every column keeps its natural width if it can; otherwise the widest ones are capped at one
    common width (never below their floor), and what is left over goes to the capped columns
    from the left. Only when the floors alone exceed the budget does the table stay wider.
    """
    natural = list(natural)
    if sum(natural) <= budget:
        return natural
    cap = max(natural)
    def widths_at(c):
        return [max(f, min(n, c)) for n, f in zip(natural, floors)]
    while cap > 1 and sum(widths_at(cap)) > budget:
        cap -= 1
    widths = widths_at(cap)
    spare = budget - sum(widths)
    for i, n in enumerate(natural):
        if spare <= 0:
            break
        if n > widths[i]:
            widths[i] += 1
            spare -= 1
    return widths


class Shown:
    """Shown as its ``text()`` (a console, nbval's comparison) and as its ``html()`` (JupyterLab, the slides)."""

    def __repr__(self) -> str:
        return self.text()

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(self.text())

    def _repr_html_(self) -> str:
        return self.html()


class Table(Shown):
    """A table with a deterministic plain-text form (what nbval compares) and an HTML form.

    The text form never needs more than ``width`` characters a line: when the natural widths do
    not fit, the widest columns are narrowed and their cells wrap onto continuation lines inside
    their column (a continuation line leaves the first column blank). A cell that would still
    need more than ``MAX_CELL_LINES`` lines is replaced by ``(note N)`` and printed in full under
    the table, after a blank line, with any ``notes`` given. The HTML form (``_repr_html_``,
    what JupyterLab and the slides show) holds the same cells, wraps long ones, and highlights
    PASS, FAIL and refusals (see ``cell_kind``).
    """

    def __init__(self, columns: Sequence[str], rows: Iterable[Sequence[Any]], title: str | None = None,
                 *, notes: Sequence[str] = (), width: int = WIDTH):
        self.columns = list(columns)
        self.rows = [["" if v is None else str(v) for v in row] for row in rows]
        self.title = title
        self.notes = list(notes)
        self.width = width

    # -- the plain-text form ------------------------------------------------------------------

    def _layout(self) -> tuple[list[int], list[list[str]], list[str]]:
        """Column widths, the cells as shown (long ones replaced by a note marker), the notes."""
        budget = self.width - len(GAP) * (len(self.columns) - 1)
        floors = [min(max(len(c), 4), self.width) for c in self.columns]
        cells = [list(row) for row in self.rows]
        moved: list[str] = []
        while True:
            natural = [len(c) for c in self.columns]
            for row in cells:
                natural = [max(w, *(len(part) for part in v.split("\n"))) for w, v in zip(natural, row)]
            widths = fit_widths(natural, floors, budget)
            too_tall = [(-len(v), r, i) for r, row in enumerate(cells) for i, (v, w) in enumerate(zip(row, widths))
                        if len(wrap_cell(v, w)) > MAX_CELL_LINES]
            if not too_tall:
                return widths, cells, moved
            # The longest such cell goes under the table first: the others may fit once it is gone.
            _, r, i = min(too_tall)
            moved.append(cells[r][i])
            cells[r][i] = f"(note {len(moved)})"

    def lines(self) -> list[str]:
        widths, cells, moved = self._layout()

        def line(values):
            return GAP.join(v.ljust(w) for v, w in zip(values, widths)).rstrip()

        out = wrap_cell(self.title, self.width) if self.title else []
        out += [line(self.columns), line(["-" * w for w in widths])]
        for row in cells:
            wrapped = [wrap_cell(v, w) for v, w in zip(row, widths)]
            height = max((len(parts) for parts in wrapped), default=1)
            for k in range(height):
                out.append(line([parts[k] if k < len(parts) else "" for parts in wrapped]))
        notes = [f"note {n}: {text}" for n, text in enumerate(moved, 1)] + self.notes
        if notes:
            out.append("")
            for note in notes:
                for part in note.split("\n"):
                    out += textwrap.wrap(part, self.width, subsequent_indent="  ",
                                         break_on_hyphens=False) or [""]
        return out

    def text(self) -> str:
        return "\n".join(self.lines())

    # -- the HTML form ------------------------------------------------------------------------

    def html(self) -> str:
        """The table as HTML: inline styles (they survive JupyterLab's sanitizer and the slides),
        a class per highlighted cell (``course-pass``, ``course-fail``, ``course-refused``);
        deterministic, like the text form."""
        esc = lambda v: html.escape(v, quote=False)
        natural = [max([len(c)] + [len(row[i]) for row in self.rows]) for i, c in enumerate(self.columns)]
        def style(i):  # a short column never wraps; a long one wraps between a readable minimum and maximum
            if natural[i] <= _SHORT:
                return _CELL_STYLE + "; white-space:nowrap"
            return (_CELL_STYLE + "; white-space:pre-wrap; overflow-wrap:anywhere; "
                    f"min-width:{min(natural[i], _MIN_WRAP)}ch; max-width:60ch")
        parts = ["<table class='course-table' style='border-collapse:collapse; margin:4px 0'>"]
        if self.title:
            parts.append(f"<caption style='text-align:left; font-weight:bold; padding:2px 0'>"
                         f"{esc(self.title)}</caption>")
        parts.append("<thead><tr>" + "".join(
            f"<th style='{_CELL_STYLE}; border-bottom:1px solid #999; white-space:nowrap'>{esc(c)}</th>"
            for c in self.columns) + "</tr></thead><tbody>")
        for row in self.rows:
            cells = []
            for i, v in enumerate(row):
                kind = cell_kind(v)
                if kind:
                    cells.append(f"<td class='course-{kind}' style='{style(i)}; {KIND_STYLES[kind]}'>{esc(v)}</td>")
                else:
                    cells.append(f"<td style='{style(i)}'>{esc(v)}</td>")
            parts.append("<tr>" + "".join(cells) + "</tr>")
        parts.append("</tbody></table>")
        if self.notes:
            parts.append("".join(f"<div class='course-note' style='white-space:pre-wrap; margin:2px 0'>"
                                 f"{esc(n)}</div>" for n in self.notes))
        return "".join(parts)


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
