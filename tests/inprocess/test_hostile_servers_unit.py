"""In-process: the checks of tests/stdio/test_hostile_servers.py's subject that start no process.

Hostile servers: every misbehaviour ends connect + walk with one typed, one-line error (or a
complete catalog where nothing was lost), within its budget, and leaves no process behind.
How long a case takes is not asserted (speed lives in ``make bench``); the budget a case ends
at is, through its error's ``budget`` detail.

The oracle is fixtures/hostile/expected.json, written by hand; nothing here is derived from
the server's code.
"""
import pytest
from course_lib import CatalogError, ProtocolViolation, connect

pytestmark = pytest.mark.anyio


async def test_policies_are_checked_before_any_process():
    with pytest.raises(ValueError, match="noise"):
        async with connect("hostile", noise="loud"):
            pass


def test_error_reasons_are_closed_sets():
    with pytest.raises(ValueError):
        ProtocolViolation("weird", "x")
    with pytest.raises(ValueError):
        CatalogError("weird", "x")
