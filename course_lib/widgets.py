"""Interactive views of a lab: a page stepper, a scenario picker and a wire-transcript viewer.

Every widget drives real servers through ``course_lib.connect`` and never blocks the kernel:

* a connection that must live across button clicks belongs to one *owner task*
  (:class:`LiveLab`) that enters **and** exits the ``async with connect(...)`` block, so the
  SDK's cancel scopes open and close in the same task;
* a click only schedules a coroutine and returns at once; the coroutine runs on the loop the
  widget was made on (the kernel's main loop), whichever thread the click arrived on
  (JupyterLab sends widget messages over a kernel subshell: see :class:`Scheduler`);
* the same coroutines are public methods (``await stepper.next_page()``), so a notebook cell
  or a test can drive a widget without a browser, and ``await widget.settle()`` waits for
  whatever clicks scheduled.

What a widget shows is built from the deterministic tables of :mod:`course_lib.display`:
cursors appear as stable labels (``c1``, ``c2`` …), never as their random values.
"""
from __future__ import annotations

import asyncio
import html
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import ipywidgets as W
import mcp_types as types
from mcp import MCPError

from course_lib.walker import CursorRules, walk
from course_lib.display import CursorLabels, Table, error_line, frame_json, wire_table
from course_lib.errors import CatalogError, CourseError
from course_lib.labs import Lab, Wire, connect
from course_lib.protocol import BOTH_ERAS
from course_lib.servers.catalog import MODES as CATALOG_MODES

# A widget waits longer than a script: a student's machine may be busy while the server starts.
REQUEST_TIMEOUT = 30.0


# --------------------------------------------------------------------------- plumbing

class Scheduler:
    """Runs click handlers as tasks on the kernel's main event loop and remembers them.

    JupyterLab sends widget messages over a kernel subshell (its ``commsOverSubshells`` setting,
    on by default), and ipykernel 7 runs a button's callback on that subshell's own thread and
    event loop. The widget's connection lives on the main loop, where the cell that made the
    widget ran: a task started on the subshell's loop would wake the main loop's waiters with a
    plain ``call_soon`` that does not wake a sleeping loop, so each click's page would appear only
    when the next message arrived. Every task therefore starts on the loop the widget was made
    on, from whichever thread the click came, through ``call_soon_threadsafe``.
    """

    def __init__(self):
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None  # made outside a loop: the first click's loop becomes the widget's
        self.pending: set[asyncio.Task] = set()
        self.failures: list[BaseException] = []

    def schedule(self, coro_fn: Callable[[], Awaitable[Any]]) -> None:
        """Start ``coro_fn()`` as a task on the widget's loop; never waits for it."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        self._loop = self._loop or running
        if self._loop is None:
            raise RuntimeError("no event loop to run the widget's work on")
        if self._loop is running:
            self._start(coro_fn)
        else:
            self._loop.call_soon_threadsafe(self._start, coro_fn)

    def _start(self, coro_fn) -> None:
        task = asyncio.get_running_loop().create_task(coro_fn())
        self.pending.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task) -> None:
        self.pending.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self.failures.append(task.exception())

    async def settle(self) -> None:
        """Wait until every scheduled task (and any task it scheduled) has finished."""
        while self.pending:
            await asyncio.gather(*list(self.pending), return_exceptions=True)


class LiveLab:
    """A ``connect(...)`` lab that outlives one cell: one owner task enters and exits it.

    ``lab = await live.start()`` returns once the server is connected (or raises what
    ``connect`` raised); ``await live.stop()`` ends the block in the task that opened it.
    """

    def __init__(self, server: str = "catalog", **options):
        self.server, self.options = server, options
        self.lab: Lab | None = None
        self.error: BaseException | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task | None = None

    async def _owner(self) -> None:
        try:
            async with connect(self.server, **self.options) as lab:
                self.lab = lab
                self._ready.set()
                await self._stop.wait()
        except (CourseError, MCPError) as exc:
            self.error = exc  # e.g. LabTimeout after the lab budget: reported, not raised
        finally:
            self._ready.set()

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def start(self) -> Lab:
        self._task = asyncio.get_running_loop().create_task(self._owner())
        await self._ready.wait()
        if self.lab is None:
            await self._task
            raise self.error or RuntimeError("the lab ended before it started")
        return self.lab

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task


def _pre(text: str) -> str:
    return f"<pre style='margin:0'>{html.escape(text)}</pre>"  # the code size of its page: 16 px on a slide


def html_table(table: Table) -> str:
    """A display.Table as an HTML table: its own HTML form (same cells, PASS/FAIL and refusals highlighted)."""
    return table.html()


# --------------------------------------------------------------------------- the first state, as static HTML

SNAPSHOT_NOTE = "a still of this widget as it first appears; it responds when the cell runs in JupyterLab"
_CONTROL = ("display:inline-block; border:1px solid #bbb; border-radius:3px; padding:1px 8px; margin:2px 4px 2px 0;"
            " background:#f4f4f4; color:#333; font-size:0.9em")


def static_html(widget: W.Widget) -> str:
    """What ``widget`` shows now, as plain HTML: boxes, their HTML panes (tables, transcripts),
    and inert pictures of the controls (a dropdown's choice, a button's label). Deterministic:
    it reads the widgets' values only, never their model ids."""
    esc = lambda v: html.escape(str(v), quote=False)
    if isinstance(widget, W.Box):
        inner = "".join(static_html(child) for child in widget.children)
        if isinstance(widget, W.HBox):
            return f"<div style='display:flex; flex-wrap:wrap; align-items:center; gap:4px'>{inner}</div>"
        return f"<div>{inner}</div>"
    if isinstance(widget, W.HTML):
        return f"<div>{widget.value}</div>" if widget.value else ""
    label = f"<span style='margin-right:4px'>{esc(widget.description)}</span>" if getattr(widget, "description", "") else ""
    if isinstance(widget, W.ToggleButtons):
        buttons = "".join(f"<span style='{_CONTROL}{'; background:#ddd; font-weight:bold' if o == widget.value else ''}'>"
                          f"{esc(o)}</span>" for o in widget.options)
        return f"<span>{label}{buttons}</span>"
    if isinstance(widget, W.Dropdown):
        return f"<span>{label}<span style='{_CONTROL}'>{esc(widget.label)} ▾</span></span>"
    if isinstance(widget, W.Button):
        faded = "; opacity:0.5" if widget.disabled else ""
        return f"<span style='{_CONTROL}{faded}'>{esc(widget.description)}</span>"
    return f"<span>{esc(type(widget).__name__)}</span>"


class FirstState:
    """Mixin: the display bundle also carries ``text/html``, a still of the widget's first state.

    JupyterLab renders the live widget view (its renderer ranks above HTML) and ignores the
    still; a saved notebook (whose stored view ``make regen`` drops) and the static slides show
    the still instead of a placeholder."""

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        bundle["text/html"] = (f"<div class='course-widget-still'>{static_html(self)}"
                               f"<div style='font-size:0.8em; font-style:italic; color:#666'>{SNAPSHOT_NOTE}</div></div>")
        return bundle


# --------------------------------------------------------------------------- wire viewer

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


# --------------------------------------------------------------------------- page stepper

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


# --------------------------------------------------------------------------- scenario picker

@dataclass(frozen=True)
class Scenario:
    """One runnable case: which server and mode, which era, and what the client does."""

    title: str
    server: str
    mode: str | None
    action: Callable[[Lab], Awaitable[str]]
    explains: str


async def _walk_tools(lab: Lab, **limits) -> str:
    catalog = await walk(lab, **limits)
    return f"complete: {', '.join(catalog.names) or '(none)'} in pages {list(catalog.page_sizes)}"


def walk_tools(**limits) -> Callable[[Lab], Awaitable[str]]:
    async def action(lab: Lab) -> str:
        return await _walk_tools(lab, **limits)
    return action


async def forged_cursor(lab: Lab) -> str:
    await lab.session.list_tools(params=types.PaginatedRequestParams(cursor="not-a-cursor-we-issued"))
    return "accepted a forged cursor"


# The picker's table: adding a scenario is one entry here.
SCENARIOS: dict[str, Scenario] = {
    "three pages 1/0/2": Scenario("three pages 1/0/2", "catalog", "normal", walk_tools(),
                                  "an empty middle page is not the end"),
    "empty-string cursor": Scenario("empty-string cursor", "catalog", "empty-token", walk_tools(),
                                    '"" is a cursor: send it back'),
    "repeated cursor": Scenario("repeated cursor", "catalog", "repeat", walk_tools(),
                                "the server hands back the cursor it just received"),
    "cursor cycle": Scenario("cursor cycle", "catalog", "cycle", walk_tools(),
                             "page 3 points back to page 2"),
    "endless catalog": Scenario("endless catalog", "catalog", "endless", walk_tools(max_pages=4),
                                "a new cursor on every page: only the page budget stops it"),
    "duplicate name": Scenario("duplicate name", "catalog", "duplicate", walk_tools(),
                               "the same tool name on two pages"),
    "catalog changed mid-walk": Scenario("catalog changed mid-walk", "catalog", "change", walk_tools(),
                                         "the cursor expired between two requests (-32602)"),
    "forged cursor": Scenario("forged cursor", "catalog", "normal", forged_cursor,
                              "a cursor the server never issued (-32602)"),
    "item budget": Scenario("item budget", "catalog", "large", walk_tools(max_items=25),
                            "10 000 tools, but we accept at most 25"),
}


async def run_scenario(name: str, era: str = "legacy", scenarios: dict[str, Scenario] | None = None) -> tuple[str, Wire]:
    """Run one scenario on a real server; return its one-line result and its wire transcript."""
    scenario = (scenarios or SCENARIOS)[name]
    wire = Wire()
    try:
        async with connect(scenario.server, mode=scenario.mode, era=era, request_timeout=REQUEST_TIMEOUT,
                           lab_timeout=2 * REQUEST_TIMEOUT) as lab:
            wire = lab.wire
            result = await scenario.action(lab)
    except (CourseError, MCPError) as exc:
        result = f"refused: {error_line(exc)}"
    return result, wire


class ScenarioPicker(FirstState, W.VBox):
    """Choose a scenario and an era, run it on a real server, read the result and the wire."""

    def __init__(self, scenarios: dict[str, Scenario] | None = None, *, scenario: str | None = None,
                 era: str = "legacy"):
        self.scenarios = dict(scenarios or SCENARIOS)
        self.scheduler = Scheduler()
        self.choice = W.Dropdown(options=list(self.scenarios), value=scenario or next(iter(self.scenarios)),
                                 description="scenario")
        self.era = W.Dropdown(options=BOTH_ERAS, value=era, description="era")
        self.run_button = W.Button(description="run", icon="play")
        self.about = W.HTML()
        self.result = W.HTML("<i>not run yet</i>")
        self.viewer = WireViewer(title="wire transcript of the run")
        super().__init__([W.HBox([self.choice, self.era, self.run_button]), self.about, self.result, self.viewer])
        self.choice.observe(lambda _: self._describe(), names="value")
        self.run_button.on_click(lambda _: self.scheduler.schedule(self.run))
        self.last: str | None = None
        self._describe()

    def __repr__(self) -> str:
        return "ScenarioPicker (run the cell in JupyterLab to use it)"

    async def settle(self) -> None:
        await self.scheduler.settle()

    def _describe(self) -> None:
        s = self.scenarios[self.choice.value]
        where = f"{s.server} --mode {s.mode}" if s.mode else s.server
        self.about.value = _pre(f"{where}: {s.explains}")

    async def run(self) -> str:
        self.run_button.disabled = True
        self.result.value = "<i>running…</i>"
        try:
            result, wire = await run_scenario(self.choice.value, self.era.value, self.scenarios)
        finally:
            self.run_button.disabled = False
        self.last = result
        self.result.value = _pre(result)
        self.viewer.show(wire)
        return result
