"""The scenario picker: one cursor failure, run on a real server in a chosen era.

The student reads the run's one-line result and its wire transcript. Adding a scenario is one
entry in ``SCENARIOS``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Awaitable, Callable

import ipywidgets as W
import mcp_types as types
from mcp import MCPError

from course_lib.display import error_line
from course_lib.errors import CourseError
from course_lib.lab_state import Lab
from course_lib.labs import connect
from course_lib.live_lab import REQUEST_TIMEOUT, Scheduler
from course_lib.protocol import BOTH_ERAS
from course_lib.walker import walk
from course_lib.widget_html import FirstState, _pre
from course_lib.wire import Wire
from course_lib.wire_viewer import WireViewer


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
