"""The page stepper: a catalog server in a chosen mode and era, one page fetched per click.

The walker's rules (``CursorRules``) are applied one page at a time (:class:`StepWalk`), so a
student sees the cursor sent, the page received and the verdict after each request. Cursors
appear as stable labels (``c1``, ``c2`` …), never as their random values.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import ipywidgets as W
from mcp import MCPError

from course_lib.display import CursorLabels, Table, error_line
from course_lib.errors import CatalogError, CourseError
from course_lib.live_lab import REQUEST_TIMEOUT, LiveLab, Scheduler
from course_lib.protocol import BOTH_ERAS
from course_lib.servers.catalog import MODES as CATALOG_MODES
from course_lib.walker import CursorRules
from course_lib.widget_html import FirstState, _pre, html_table
from course_lib.wire import Wire
from course_lib.wire_viewer import WireViewer


@dataclass
class Step:
    """One page the stepper fetched, as a student reads it."""

    page: int
    sent: str        # the cursor label sent ("None" for the first page)
    received: str    # item names on the page, or the error
    next_cursor: str
    verdict: str


@dataclass
class StepWalk:
    """The walker's rules (``CursorRules``, as in ``walk``) applied one page per call."""

    max_pages: int = 8
    label: CursorLabels = field(default_factory=CursorLabels)
    steps: list[Step] = field(default_factory=list)
    verdict: str = "not started"
    done: bool = False

    def __post_init__(self):
        self.rules = CursorRules("tools", max_pages=self.max_pages)

    @property
    def names(self) -> list[str]:
        return [tool.name for tool in self.rules.items]

    def seen_labels(self) -> list[str]:
        return sorted((self.label(c) for c in self.rules.seen_cursors), key=lambda s: (len(s), s))

    async def next_page(self, session) -> Step:
        if self.done:
            raise RuntimeError(f"the walk is over: {self.verdict}")
        page_no = self.rules.page
        sent = self.label(self.rules.cursor)
        try:
            page = await session.list_tools(params=self.rules.request_params())
        except (CatalogError, MCPError) as exc:  # the page budget, or the server refused the request
            return self._end(page_no, sent, "—", "", exc)
        received = ", ".join(tool.name for tool in page.tools) or "(empty page)"
        nxt = self.label(page.next_cursor)
        try:
            more = self.rules.accept(page.tools, page.next_cursor)
        except CatalogError as exc:
            return self._end(page_no, sent, received, nxt, exc)
        if more is None:
            self.done = True
            self.verdict = f"complete: {len(self.rules.items)} tools in {page_no} pages {self.rules.sizes}"
        else:
            self.verdict = f"more: send {nxt} next"
        step = Step(page_no, sent, received, nxt, self.verdict)
        self.steps.append(step)
        return step

    def _end(self, page_no, sent, received, nxt, exc) -> Step:
        self.done = True
        self.verdict = f"refused, nothing returned: {error_line(exc)}"
        step = Step(page_no, sent, received, nxt, self.verdict)
        self.steps.append(step)
        return step

    def table(self) -> Table:
        return Table(["page", "cursor sent", "page received", "next cursor", "verdict"],
                     [[s.page, s.sent, s.received, s.next_cursor, s.verdict] for s in self.steps])


class PageStepper(FirstState, W.VBox):
    """Start a catalog server in a mode and era, then fetch one page per click.

    Shows the cursor sent, the page received, the set of cursors seen so far and the walker's
    verdict, plus the wire transcript of the connection.
    """

    def __init__(self, mode: str = "normal", era: str = "legacy", *, max_pages: int = 8,
                 lab_timeout: float = 900.0):
        self.scheduler = Scheduler()
        self.max_pages, self.lab_timeout = max_pages, lab_timeout
        self.mode = W.Dropdown(options=CATALOG_MODES, value=mode, description="mode")
        self.era = W.Dropdown(options=BOTH_ERAS, value=era, description="era")
        self.start_button = W.Button(description="start server", icon="play")
        self.next_button = W.Button(description="next page", icon="forward", disabled=True)
        self.stop_button = W.Button(description="stop server", icon="stop", disabled=True)
        self.status = W.HTML("<i>no server running</i>")
        self.steps_view = W.HTML()
        self.seen_view = W.HTML()
        self.viewer = WireViewer(title="wire transcript of this connection")
        super().__init__([W.HBox([self.mode, self.era]),
                          W.HBox([self.start_button, self.next_button, self.stop_button]),
                          self.status, self.steps_view, self.seen_view, self.viewer])
        self.start_button.on_click(lambda _: self.scheduler.schedule(self.start))
        self.next_button.on_click(lambda _: self.scheduler.schedule(self.next_page))
        self.stop_button.on_click(lambda _: self.scheduler.schedule(self.stop))
        self.live: LiveLab | None = None
        self.walk: StepWalk | None = None

    def __repr__(self) -> str:
        return "PageStepper (run the cell in JupyterLab to use it)"

    async def settle(self) -> None:
        await self.scheduler.settle()

    def _buttons(self, running: bool) -> None:
        self.start_button.disabled = running
        self.mode.disabled = self.era.disabled = running
        self.stop_button.disabled = not running
        self.next_button.disabled = not running or self.walk is None or self.walk.done

    async def start(self) -> None:
        """Start a fresh server in the chosen mode and era (stopping any previous one)."""
        await self.stop()
        self.status.value = "<i>starting…</i>"
        self.walk = StepWalk(max_pages=self.max_pages)
        self.live = LiveLab("catalog", mode=self.mode.value, era=self.era.value, lab_timeout=self.lab_timeout,
                            request_timeout=REQUEST_TIMEOUT)
        try:
            lab = await self.live.start()
        except (CourseError, MCPError) as exc:
            self.live = None
            self.status.value = _pre(f"could not start: {error_line(exc)}")
            self._buttons(False)
            return
        self.status.value = _pre(f"catalog --mode {self.mode.value}, era {self.era.value} "
                                 f"(protocol {lab.protocol_version or 'per request'}): press “next page”")
        self._render()
        self._buttons(True)

    async def next_page(self) -> Step | None:
        """Fetch the next page through the running connection and apply the walker's checks."""
        if self.live is None or self.live.lab is None or self.walk is None:
            self.status.value = _pre("start a server first")
            return None
        if not self.live.running:
            self.status.value = _pre(f"the lab has ended: {error_line(self.live.error) if self.live.error else 'stopped'}")
            self._buttons(False)
            return None
        step = await self.walk.next_page(self.live.lab.session)
        self._render()
        self._buttons(True)
        return step

    async def stop(self) -> None:
        """Stop the server (the owner task leaves its ``async with``)."""
        if self.live is not None:
            live, self.live = self.live, None
            await live.stop()
            self.status.value = _pre("server stopped")
            self.viewer.show(live.lab.wire if live.lab else Wire())
        self._buttons(False)

    def seen_table(self) -> Table:
        w = self.walk or StepWalk()
        return Table(["seen cursors", "tools so far", "verdict"],
                     [[", ".join(w.seen_labels()) or "(none)", ", ".join(w.names) or "(none)", w.verdict]])

    def _render(self) -> None:
        self.steps_view.value = html_table(self.walk.table()) if self.walk and self.walk.steps else ""
        self.seen_view.value = html_table(self.seen_table())
        if self.live is not None and self.live.lab is not None:
            self.viewer.show(self.live.lab.wire)
