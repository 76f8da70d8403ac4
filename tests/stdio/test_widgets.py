"""The widgets, driven through their Python API: simulated clicks on real servers.

Expected pages and verdicts come from hand-written fixtures (fixtures/widgets/*.json).
"""
import asyncio
import json

import anyio
import pytest

from course_lib.labs import pid_alive
from course_lib.live_lab import LiveLab
from course_lib.page_stepper import PageStepper
from course_lib.paths import fixture
from course_lib.scenario_picker import SCENARIOS, Scenario, ScenarioPicker, forged_cursor, run_scenario
from course_lib.wire import Wire
from course_lib.wire_viewer import WireViewer

pytestmark = pytest.mark.anyio

STEPPER = json.loads(fixture("widgets", "stepper.json").read_text())
PICKER = json.loads(fixture("widgets", "scenarios.json").read_text())


async def click(widget, button):
    """A click returns at once (the work is only scheduled); then wait for the work."""
    button.click()
    assert widget.scheduler.pending, "a click must schedule work, not run it inline"
    await widget.settle()
    assert not widget.scheduler.failures, widget.scheduler.failures


@pytest.mark.parametrize("mode", sorted(STEPPER["modes"]))
async def test_stepper_pages_and_verdicts(mode):
    expected = STEPPER["modes"][mode]
    stepper = PageStepper(mode=mode, max_pages=STEPPER["max_pages"])
    assert stepper.next_button.disabled and not stepper.start_button.disabled
    await click(stepper, stepper.start_button)
    assert stepper.live is not None, stepper.status.value
    lab = stepper.live.lab
    try:
        assert lab.alive and stepper.mode.disabled and not stepper.next_button.disabled
        for _ in expected["steps"]:
            await click(stepper, stepper.next_button)
        assert stepper.walk.table().rows == [[str(v) for v in row] for row in expected["steps"]]
        assert stepper.walk.seen_labels() == expected["seen"]
        assert stepper.next_button.disabled, "the walk is over: no further page may be requested"
        assert len(lab.wire.requests("tools/list")) == expected["requests"]
        # What the student reads: the step table and the seen-cursor set, never a raw cursor.
        shown = stepper.steps_view.value + stepper.seen_view.value + stepper.viewer.table.value
        assert expected["steps"][-1][4] in shown.replace("&quot;", '"').replace("&#x27;", "'")
        raw = {f.params.get("cursor") for f in lab.wire.requests("tools/list")} - {None, ""}
        assert raw and not any(c in shown for c in raw)
        assert lab.alive, "the connection lives across clicks"
    finally:
        await click(stepper, stepper.stop_button)
    assert not pid_alive(lab.pid) and stepper.live is None
    assert stepper.start_button.disabled is False and stepper.next_button.disabled


async def test_stepper_both_eras_and_restart(era):
    stepper = PageStepper(mode="normal", era=era)
    await click(stepper, stepper.start_button)
    first = stepper.live.lab
    await click(stepper, stepper.next_button)
    # A fresh start replaces the server (the old one is stopped) and the walk.
    stepper.start_button.disabled = False  # the button is disabled while running: start() is also the API
    await stepper.start()
    second = stepper.live.lab
    assert not pid_alive(first.pid) and second.alive and stepper.walk.steps == []
    for _ in range(3):
        await click(stepper, stepper.next_button)
    assert stepper.walk.verdict == "complete: 3 tools in 3 pages [1, 0, 2]"
    methods = second.wire.methods()
    assert methods.count("tools/list") == 3
    assert ("initialize" in methods) == (era == "legacy")
    await stepper.stop()
    assert not pid_alive(second.pid)


async def test_click_does_not_block_the_loop():
    stepper = PageStepper(mode="normal")
    stepper.start_button.click()
    assert stepper.live is None or stepper.live.lab is None  # nothing started inline
    assert len(stepper.scheduler.pending) == 1  # the start is a task on the loop
    other = asyncio.get_running_loop().create_task(asyncio.sleep(0, "other work"))
    assert await other == "other work"  # other work runs while the start is under way
    with anyio.fail_after(120):  # bounds a failure only
        await stepper.scheduler.settle()
    assert stepper.scheduler.failures == [] and stepper.live.lab.alive
    await stepper.stop()


async def test_live_lab_reports_a_failed_start():
    live = LiveLab("catalog", mode="normal", era="legacy", args=["--no-such-flag"],
                   request_timeout=30)
    with pytest.raises(Exception) as info:
        await live.start()
    assert type(info.value).__name__ in ("ServerCrashed", "LaunchError")
    assert not live.running


async def _run_all(names, era):
    limiter = asyncio.Semaphore(2)

    async def one(name):
        async with limiter:
            return name, await run_scenario(name, era)

    return dict(await asyncio.gather(*(one(n) for n in names)))


async def test_every_scenario_result_matches_the_fixture(era):
    assert set(PICKER) - {"_comment"} == set(SCENARIOS), "every scenario has a hand-written expectation"
    results = await _run_all(list(SCENARIOS), era)
    for name, (result, wire) in results.items():
        assert result == PICKER[name]["result"], name
        assert len(wire.requests("tools/list")) == PICKER[name]["requests"], name


async def test_picker_click_shows_result_and_wire():
    picker = ScenarioPicker(scenario="repeated cursor")
    assert "catalog --mode repeat" in picker.about.value
    await click(picker, picker.run_button)
    assert picker.last == PICKER["repeated cursor"]["result"]
    assert "cursor_repeated" in picker.result.value
    rows = picker.viewer.rows().rows
    assert {r[1] for r in rows} == {"→", "←"}
    assert [r[3] for r in rows if r[1] == "→" and r[2] == "request"].count("tools/list") == 2
    picker.choice.value = "forged cursor"
    assert "never issued" in picker.about.value
    await click(picker, picker.run_button)
    assert picker.last == PICKER["forged cursor"]["result"]


async def test_picker_is_data_driven():
    """A new scenario is one table entry: the picker offers and runs it."""
    table = {"forged on the 2026 era": Scenario("forged on the 2026 era", "catalog", "normal", forged_cursor,
                                                 "one entry, nothing else")}
    picker = ScenarioPicker(table, era="2026-07-28")
    assert list(picker.choice.options) == ["forged on the 2026 era"]
    await click(picker, picker.run_button)
    assert picker.last == PICKER["forged cursor"]["result"]


async def test_wire_viewer_directions_and_frame_detail():
    result, wire = await run_scenario("three pages 1/0/2", "legacy")
    viewer = WireViewer(wire)
    both = viewer.rows().rows
    assert len(both) == len(wire) and [int(r[0]) for r in both] == list(range(len(wire)))
    viewer.direction.value = "client → server"
    out = viewer.rows().rows
    assert out and all(r[1] == "→" for r in out) and len(out) == sum(f.direction == "→" for f in wire)
    viewer.direction.value = "server → client"
    back = viewer.rows().rows
    assert back and all(r[1] == "←" for r in back) and len(out) + len(back) == len(both)
    assert "<table" in viewer.table.value
    # Opening a frame shows its JSON with the cursor hidden.
    request = wire.requests("tools/list")[1]
    viewer.frame.value = request.index
    assert "&lt;cursor&gt;" in viewer.detail.value and request.params["cursor"] not in viewer.detail.value
    viewer.show(Wire())
    assert viewer.rows().rows == [] and "no frames" in viewer.table.value


def test_clicks_over_a_kernel_subshell_are_answered_before_the_next(tmp_path):
    """JupyterLab sends widget messages over a kernel subshell: each click's page arrives at once.

    A real kernel and the comm messages a browser sends for a click, on a subshell as JupyterLab
    does (``commsOverSubshells``): ipykernel 7 runs a callback on the subshell's thread and loop.
    The next click is made only once the last one's page is shown (the browser check does the same
    with real clicks in Chromium).
    """
    import html
    import os
    import queue
    import time

    from jupyter_client.manager import start_new_kernel

    from course_lib.paths import ROOT

    expected = STEPPER["modes"]["normal"]
    km, kc = start_new_kernel(kernel_name="python3", startup_timeout=120,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=str(tmp_path))
    try:
        code = ("import json\nfrom course_lib.widgets import PageStepper\ns = PageStepper(mode='normal')\n"
                "print(json.dumps({n: getattr(s, n).model_id for n in "
                "('start_button', 'next_button', 'stop_button', 'status', 'steps_view')}))")
        ids = {}
        def collect(m):
            if m["msg_type"] == "stream":
                ids.update(json.loads(m["content"]["text"]))
        reply = kc.execute_interactive(code, timeout=120, output_hook=collect)
        assert reply["content"]["status"] == "ok" and ids, reply["content"]
        kc.control_channel.send(kc.session.msg("create_subshell_request", {}))
        subshell = kc.get_control_msg(timeout=30)["content"]["subshell_id"]

        made = []

        def click_and_wait(button, view, shows, budget=20.0):
            made.append(button)
            msg = kc.session.msg("comm_msg", {"comm_id": ids[button],
                                              "data": {"method": "custom", "content": {"event": "click"}}})
            msg["header"]["subshell_id"] = subshell
            kc.shell_channel.send(msg)
            deadline = time.monotonic() + budget
            while time.monotonic() < deadline:
                try:
                    m = kc.get_iopub_msg(timeout=max(0.05, deadline - time.monotonic()))
                except queue.Empty:
                    break
                state = m["content"].get("data", {}).get("state", {}) if m["msg_type"] == "comm_msg" else {}
                if m["content"].get("comm_id") == ids[view] and shows(state.get("value", "")):
                    return
            pytest.fail(f"click {len(made)} ({button}) not answered within {budget:g} s")

        click_and_wait("start_button", "status", lambda v: "press" in v)
        for n, row in enumerate(expected["steps"], 1):
            click_and_wait("next_button", "steps_view",
                           lambda v: v.count("<tr>") == n + 1 and html.escape(row[4], quote=False) in v)
        click_and_wait("stop_button", "status", lambda v: "server stopped" in v)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)
