"""Real clicks on a chapter's widget in JupyterLab, each answered before the next (the browser check's part).

The plan is hand-written in ``fixtures/widgets/clicks.json``: per chapter, the cell that shows the
widget and, in order, the button to click (or the dropdown option to choose) and what the widget
must then show: a text block, a table's exact rows (the stepper's rows come from
``fixtures/widgets/stepper.json``), buttons that must be disabled. Each step is a real Playwright
click in the page; the next click waits until the page shows what this one asked for, within the
plan's budget. A widget that answers a click late (the stepper that showed each page one click
behind) therefore fails at the click it did not answer, and a step whose content is already on the
page before its click fails too: it could not tell a late widget from a prompt one.
"""
from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass

from course_lib.paths import fixture

PLAN_FILE = ("widgets", "clicks.json")

# What a cell's outputs show, read from the page: course tables (first column heading → rows of
# cell texts), text blocks, the whole text, and the labels of disabled buttons.
_SHOWN = """i => {
    const cell = window.courseNotebook.content.widgets[i];
    const out = cell.outputArea.node;
    const text = node => node.textContent.trim();
    const tables = {};
    for (const table of out.querySelectorAll('table.course-table')) {
        const head = table.querySelector('th');
        tables[head ? text(head) : ''] = Array.from(table.querySelectorAll('tbody tr'),
            tr => Array.from(tr.querySelectorAll('td'), text));
    }
    return {tables, pres: Array.from(out.querySelectorAll('pre'), text), text: out.textContent,
            disabled: Array.from(out.querySelectorAll('button'), b => b.disabled ? text(b) : null)
                           .filter(label => label !== null)};
}"""

_MARK = "i => { window.courseNotebook.content.widgets[i].node.dataset.courseCell = String(i); }"


def load_plan() -> dict:
    return json.loads(fixture(*PLAN_FILE).read_text())


def expectations(plan: dict, chapter: str) -> list[dict]:
    """Each step of ``chapter``'s plan with what it expects spelled out (``stepper_rows`` resolved)."""
    entry = plan["chapters"][chapter]
    stepper = json.loads(fixture("widgets", "stepper.json").read_text())
    steps = []
    for step in entry["steps"]:
        want = {k: step[k] for k in ("pre", "contains", "disabled") if k in step}
        want["tables"] = {step["table"]: step["rows"]} if "table" in step else {}
        if "stepper_rows" in step:
            rows = stepper["modes"][entry["mode"]]["steps"][:step["stepper_rows"]]
            want["tables"]["page"] = [[str(v) for v in row] for row in rows]
        steps.append({"action": ("click", step["click"]) if "click" in step else ("select", *step["select"]),
                      "want": want})
    return steps


def mismatches(want: dict, shown: dict) -> list[str]:
    """What the page does not show yet of what a step expects (empty: the step is answered)."""
    missing = []
    if "pre" in want and want["pre"] not in shown["pres"]:
        missing.append(f"no text block shows {want['pre']!r} (shown: {shown['pres'][:3]!r})")
    if "contains" in want and want["contains"] not in shown["text"]:
        missing.append(f"the widget does not show {want['contains']!r}")
    for head, rows in want["tables"].items():
        got = shown["tables"].get(head, [])
        if got != rows:
            missing.append(f"table {head!r} shows {len(got)} rows {got[-1:]!r}, expected {len(rows)} rows {rows[-1:]!r}")
    for label in want.get("disabled", []):
        if label not in shown["disabled"]:
            missing.append(f"button {label!r} is not disabled")
    return missing


@dataclass
class ClickResult:
    number: int
    action: str
    seconds: float = 0.0
    problem: str = ""

    def line(self) -> str:
        return f"click {self.number} ({self.action}): " + (self.problem or f"answered in {self.seconds:.1f} s")


def exact(label: str) -> re.Pattern:
    """A control's label exactly (``next page``, not ``next page 2``), spaces around it aside."""
    return re.compile(rf"^\s*{re.escape(label)}\s*$")


def describe(action: tuple) -> str:
    return f"button {action[1]!r}" if action[0] == "click" else f"{action[1]} = {action[2]!r}"


async def drive(page, cell_index: int, steps: list[dict], budget: float) -> list[ClickResult]:
    """Make each step's click in the page; stop at the first click the widget does not answer."""
    await page.evaluate(_MARK, cell_index)
    output = page.locator(f"[data-course-cell='{cell_index}'] .jp-OutputArea")
    results = []
    for number, step in enumerate(steps, 1):
        action, want = step["action"], step["want"]
        result = ClickResult(number, describe(action))
        results.append(result)
        if not mismatches(want, await page.evaluate(_SHOWN, cell_index)):
            result.problem = "what it expects is already shown before the click: the step proves nothing"
            break
        started = time.monotonic()
        try:
            if action[0] == "click":
                await output.locator("button").filter(has_text=exact(action[1])).click(timeout=budget * 1000)
            else:
                dropdown = output.locator(".widget-dropdown").filter(
                    has=page.locator("label", has_text=exact(action[1])))
                await dropdown.locator("select").select_option(label=action[2], timeout=budget * 1000)
        except Exception as exc:  # no such control, or it stayed disabled: the click could not be made
            result.problem = f"could not be made: {(str(exc).splitlines() or [''])[0][:160]}"
            break
        while True:
            missing = mismatches(want, await page.evaluate(_SHOWN, cell_index))
            result.seconds = time.monotonic() - started
            if not missing:
                break
            if result.seconds > budget:
                result.problem = f"not answered within {budget:g} s: " + "; ".join(missing)
                break
            await asyncio.sleep(0.1)
        if result.problem:
            break
    return results
