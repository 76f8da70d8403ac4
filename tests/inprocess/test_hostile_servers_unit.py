"""In-process: the checks of tests/stdio/test_hostile_servers.py's subject that start no process."""
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
