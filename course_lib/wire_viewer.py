"""The wire-transcript viewer: a lab's frames as a readable table, one frame opened as JSON.

It stands alone (chapter 00) and inside the page stepper and the scenario picker. What it shows
is built from the deterministic tables of :mod:`course_lib.display`.
"""
from __future__ import annotations

import html

import ipywidgets as W

from course_lib.display import Table, frame_json, wire_table
from course_lib.widget_html import FirstState, _pre, html_table
from course_lib.wire import Wire


DIRECTIONS = {"both": None, "client → server": "→", "server → client": "←"}


class WireViewer(FirstState, W.VBox):
    """A wire transcript as a readable table, both directions, with one frame opened as JSON."""

    def __init__(self, wire: Wire | None = None, *, title: str = "wire transcript"):
        self.direction = W.ToggleButtons(options=list(DIRECTIONS), value="both", description="show")
        self.frame = W.Dropdown(options=[("(none)", -1)], value=-1, description="frame")
        self.table = W.HTML()
        self.detail = W.HTML()
        self.title = title
        super().__init__([W.HTML(f"<b>{html.escape(title)}</b>"), self.direction, self.table,
                          self.frame, self.detail])
        self.direction.observe(lambda _: self.refresh(), names="value")
        self.frame.observe(lambda _: self._show_frame(), names="value")
        self.wire = wire or Wire()
        self.show(self.wire)

    def __repr__(self) -> str:
        return "WireViewer (run the cell in JupyterLab to see it)"

    def show(self, wire: Wire) -> None:
        self.wire = wire
        self.frame.options = [("(none)", -1)] + [(f"#{f.index} {f.direction} {f.method or f.kind}", f.index)
                                                 for f in wire]
        self.frame.value = -1
        self.refresh()

    def rows(self) -> Table:
        """The table currently shown: wire_table filtered by the chosen direction."""
        full = wire_table(self.wire)
        wanted = DIRECTIONS[self.direction.value]
        rows = [r for r in full.rows if wanted is None or r[1] == wanted]
        return Table(full.columns, rows)

    def refresh(self) -> None:
        table = self.rows()
        self.table.value = html_table(table) if table.rows else "<i>no frames</i>"
        self._show_frame()

    def _show_frame(self) -> None:
        index = self.frame.value
        if index is None or index < 0 or index >= len(self.wire):
            self.detail.value = ""
            return
        frame = self.wire.frames[index]
        self.detail.value = _pre(frame_json(frame) if frame.message is not None else frame.raw)
