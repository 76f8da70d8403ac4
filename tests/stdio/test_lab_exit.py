"""No server process or helper outlives its lab, whichever client started the server.

Every way the course starts a server (``connect``, the raw pipe, the strict line client, the
loopback HTTP site) ends it through the same stop: the server, then its whole process group,
then a sweep of the lab's processes that left the group, reported in the site's ``swept``.
The hostile server's helper modes cover the three kinds of helper: one that stays in the
group, one that leaves it (``setsid``), and one in the group that ignores SIGTERM. A helper
in the group must be gone through the group kill, so the sweep must find nothing; a helper
outside it only the sweep can end, so the sweep must report exactly that helper.

What the sweep reports per mode is the hand-written oracle in fixtures/hostile/expected.json.
"""
import json
import os
from contextlib import asynccontextmanager

import psutil
import pytest

from course_lib import connect
from course_lib.labs import pid_alive
from course_lib.line_client import LineClient
from course_lib.loopback import serve_http
from course_lib.paths import ROOT
from course_lib.raw import raw_lines

pytestmark = pytest.mark.anyio

MODES = json.loads((ROOT / "fixtures" / "hostile" / "expected.json").read_text(encoding="utf-8"))["modes"]
# Whether the mode's helper leaves the server's process group (written by hand, not read from the server).
LEAVES_GROUP = {"group-helper": False, "grandchild": True, "helper-ignores-term": False}
SITES = ("connect", "raw", "line", "http")
# Budgets that only bound a failure on a loaded machine.
BUDGET = {"request_timeout": 30, "startup_timeout": 60, "lab_timeout": 120}


@asynccontextmanager
async def started(site: str, mode: str):
    """The hostile server in ``mode``, started through ``site``; yields what the site yields."""
    if site == "connect":
        async with connect("hostile", mode=mode, **BUDGET) as lab:
            yield lab
    elif site == "raw":
        async with raw_lines("hostile", mode=mode) as pipe:
            yield pipe
    elif site == "line":
        async with LineClient.for_server("hostile", mode) as wire:
            yield wire
    else:
        async with serve_http("hostile", mode=mode) as http:
            yield http


@pytest.mark.parametrize("mode", sorted(LEAVES_GROUP))
@pytest.mark.parametrize("site", SITES)
async def test_no_helper_outlives_its_lab(site, mode):
    async with started(site, mode) as lab:
        # The server is serving, so its helper has set itself up (the server waited for that).
        children = psutil.Process(lab.pid).children()
        assert len(children) == 1, children
        helper = children[0].pid
        assert pid_alive(helper)
        assert (os.getpgid(helper) != lab.pid) == LEAVES_GROUP[mode]
    assert not pid_alive(lab.pid)
    assert not pid_alive(helper)
    # The group kill ended a helper in the group before the sweep looked; only one that left
    # the group was the sweep's to kill.
    assert lab.swept == [helper] * MODES[mode]["swept"]
