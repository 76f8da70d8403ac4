"""connect(): a real process per lab, stderr captured, the wire recorded, nothing left behind."""
import sys

import anyio
import pytest

from course_lib import LabTimeout, LaunchError, connect, walk
from course_lib.labs import pid_alive as alive

pytestmark = pytest.mark.anyio

NOISY = [sys.executable, "-c",
         "import sys; print('hello from the server', file=sys.stderr, flush=True); "
         "from course_lib.servers.__main__ import run; run(['catalog'])"]



async def test_process_is_gone_and_stderr_captured(era):
    async with connect(NOISY, era=era) as lab:
        assert alive(lab.pid)
        assert (await walk(lab)).names == ["alpha", "beta", "gamma"]
    assert not alive(lab.pid)
    assert lab.returncode == 0
    assert "hello from the server" in lab.stderr
    assert not lab.workdir.exists()  # the lab directory is removed; its files are kept in memory


async def test_wire_records_both_directions_in_order(era):
    async with connect("catalog", era=era) as lab:
        await walk(lab)
    methods = lab.wire.methods()
    if era == "legacy":
        assert methods == ["initialize", "notifications/initialized", "tools/list", "tools/list", "tools/list"]
    else:
        assert methods == ["tools/list"] * 3
        assert all("_meta" in f.params for f in lab.wire.requests())
    for request in lab.wire.requests():
        reply = lab.wire.response_to(request)
        assert reply is not None and reply.direction == "←" and reply.index > request.index


async def test_caller_exception_propagates_unwrapped_and_cleans_up(era):
    with pytest.raises(KeyError, match="student bug"):
        async with connect("catalog", era=era) as lab:
            raise KeyError("student bug")
    assert not alive(lab.pid)


async def test_lab_budget_ends_a_stuck_block():
    # A server given as an argv is not waited for, and a stateless client sends nothing on
    # entering: the block starts as soon as the process exists, so the whole lab budget is the
    # block's, however slowly the server itself would start.
    entered = []
    with pytest.raises(LabTimeout) as caught:
        async with connect(NOISY, era="2026-07-28", lab_timeout=4) as lab:
            entered.append(lab)
            await anyio.Event().wait()  # stuck for good: only the lab budget ends it
    assert caught.value.details["budget"] == "lab"
    assert entered and not alive(entered[0].pid)


async def test_unknown_server_and_bad_era_fail_before_any_process():
    with pytest.raises(LaunchError, match="no course server named 'nope'"):
        async with connect("nope"):
            pass
    with pytest.raises(ValueError, match="era"):
        async with connect("catalog", era="2024-01-01"):
            pass
    with pytest.raises(LaunchError, match="cannot start"):
        async with connect(["/nonexistent/server-binary"]):
            pass


async def test_server_env_is_explicit(monkeypatch):
    monkeypatch.setenv("COURSE_SECRET_TOKEN", "do-not-leak")
    probe = [sys.executable, "-c",
             "import os, sys; print(sorted(os.environ), file=sys.stderr, flush=True); "
             "from course_lib.servers.__main__ import run; run(['catalog'])"]
    async with connect(probe) as lab:
        pass
    assert "COURSE_SECRET_TOKEN" not in lab.stderr
    assert "COURSE_LAB_DIR" in lab.stderr
