"""Hostile servers: every misbehaviour ends connect + walk with one typed, one-line error (or a
complete catalog where nothing was lost), within its budget, and leaves no process behind.
How long a case takes is not asserted (speed lives in ``make bench``); the budget a case ends
at is, through its error's ``budget`` detail.

The oracle is fixtures/hostile/expected.json, written by hand; nothing here is derived from
the server's code.
"""
import json
import os
import time
import uuid

import psutil
import pytest

import course_lib
from course_lib import connect, walk
from course_lib.labs import EXIT_GRACE, TERM_GRACE, pid_alive
from course_lib.paths import ROOT
from course_lib._runtime.proctree import lab_processes

pytestmark = pytest.mark.anyio

EXPECTED = json.loads((ROOT / "fixtures" / "hostile" / "expected.json").read_text(encoding="utf-8"))
MODES = EXPECTED["modes"]
# Budgets that only bound a failure on a loaded machine; a mode may set its own (hang: 2 s).
BUDGET = {"request_timeout": 30, "startup_timeout": 60, "lab_timeout": 120}


def marked(marker: str) -> list[int]:
    """Live processes started with HOSTILE_MARK=<marker> in their environment."""
    return [proc.pid for proc in psutil.process_iter(["environ"])
            if (proc.info["environ"] or {}).get("HOSTILE_MARK") == marker and pid_alive(proc.pid)]


async def run(case: str, era: str):
    """Launch the case's mode, walk the tools, return (outcome, lab, survivors)."""
    spec = MODES[case]
    marker = uuid.uuid4().hex
    lab = None
    try:
        async with connect("hostile", mode=spec.get("mode", case), era=era, env={"HOSTILE_MARK": marker},
                           **{**BUDGET, **spec.get("connect", {})}) as lab:
            outcome = await walk(lab)
    except Exception as exc:  # noqa: BLE001 - the oracle names the exact type below
        outcome = exc
    return outcome, lab, marked(marker)


def check_outcome(case: str, outcome) -> None:
    spec = MODES[case]
    if spec["outcome"] == "catalog":
        assert isinstance(outcome, course_lib.Catalog), outcome
        assert outcome.names == EXPECTED["pages"]["names"]
        assert list(outcome.page_sizes) == EXPECTED["pages"]["page_sizes"]
        return
    # One typed error, never a group, never a partial catalog.
    assert type(outcome).__name__ == spec["type"], repr(outcome)
    assert isinstance(outcome, getattr(course_lib, spec["type"]))
    assert not isinstance(outcome, BaseExceptionGroup)
    if spec["type"] == "LabTimeout":  # the request budget ended it, never the lab budget
        assert outcome.details["budget"] == "request"
    assert (outcome.reason, str(outcome)) == (spec["reason"], spec["message"])
    assert "\n" not in str(outcome)


ALL = sorted(MODES)
# The transport and catalog cases depend on the protocol era's result shape; run them in both.
BOTH_ERAS = ["noise", "bad-frame", "bad-tool", "snake-cursor", "crash"]


@pytest.mark.parametrize("case", ALL)
async def test_hostile_mode_legacy(case):
    outcome, lab, survivors = await run(case, "legacy")
    check_outcome(case, outcome)
    assert survivors == [], f"processes of the lab survived: {survivors}"
    if lab is not None:
        assert not pid_alive(lab.pid)
        if "returncode" in MODES[case]:
            assert lab.returncode == MODES[case]["returncode"]
        if "swept" in MODES[case]:
            assert len(lab.swept) == MODES[case]["swept"], lab.swept
        if "noise" in MODES[case]:
            assert lab.noise == MODES[case]["noise"]
        if "stderr_lines" in MODES[case]:
            logged = [line for line in lab.stderr.splitlines() if line.startswith("hostile:")]
            assert logged == MODES[case]["stderr_lines"]


@pytest.mark.parametrize("case", BOTH_ERAS)
async def test_hostile_mode_2026(case):
    outcome, lab, survivors = await run(case, "2026-07-28")
    check_outcome(case, outcome)
    assert survivors == []
    if "noise" in MODES[case]:
        assert lab.noise == MODES[case]["noise"]


async def test_noise_is_recorded_on_the_wire_and_never_delivered():
    async with connect("hostile", mode="noise", **BUDGET) as lab:
        await walk(lab)
    noise_rows = [f.raw for f in lab.wire if f.kind == "noise"]
    assert noise_rows == MODES["noise"]["noise"]
    # Every request still got exactly one answer, matched by id.
    for request in lab.wire.requests():
        assert lab.wire.response_to(request) is not None


async def test_hang_ends_at_the_request_budget_not_the_lab_budget():
    with pytest.raises(course_lib.LabTimeout) as caught:
        async with connect("hostile", mode="hang", request_timeout=2, startup_timeout=60, lab_timeout=600) as lab:
            await lab.session.list_tools()  # the server is up: from here on only the request budget counts
            up = time.monotonic()
            await walk(lab)
    waited = time.monotonic() - up
    assert caught.value.details["budget"] == "request"
    assert waited >= 2, waited  # never before the request budget (how much later is not asserted)
    assert not pid_alive(lab.pid)


async def test_spawned_helpers_are_gone_even_after_setsid():
    marker = uuid.uuid4().hex
    async with connect("hostile", mode="grandchild", env={"HOSTILE_MARK": marker}, **BUDGET) as lab:
        helper = int(lab.file("helper.pid"))
        assert pid_alive(helper)
        # The helper left the server's process group and session: a group kill cannot reach it.
        assert os.getpgid(helper) == os.getsid(helper) == helper != lab.pid
        assert helper in lab_processes(lab.pid, lab.workdir)
        await walk(lab)
    assert not pid_alive(helper)
    assert lab.swept == [helper]
    assert marked(marker) == []


async def test_sigterm_ignored_is_killed_after_the_grace():
    async with connect("hostile", mode="ignore-term", **BUDGET) as lab:
        await walk(lab)
        closing = time.monotonic()
    took = time.monotonic() - closing
    assert lab.returncode == -9  # SIGKILL ended it ...
    assert took >= EXIT_GRACE + TERM_GRACE - 0.1, took  # ... only after both graces were given
