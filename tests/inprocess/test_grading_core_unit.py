"""In-process: the checks of tests/stdio/test_grading_core.py's subject that start no process."""
import pytest
from mcp import MCPError

from course_lib import CatalogError
from course_lib.grading.core import grade_walker, load_battery

pytestmark = pytest.mark.anyio


async def first_page_only(session):
    return [t.name for t in (await session.list_tools()).tools]


def test_every_row_of_the_battery_states_its_requests_and_refusal():
    _, scenarios, spec = load_battery("walk")
    for s in scenarios:
        assert isinstance(s.expect.get("requests"), int), s.name
        if s.expect.get("raises"):
            assert s.expect["refusal"]["type"] in ("CatalogError", "MCPError"), s.name
    order = next(s for s in scenarios if s.name == "server order").expect["names"]
    assert order != sorted(order), "the server-order row must not be alphabetical"


async def test_unknown_scenario_is_a_clear_error():
    with pytest.raises(ValueError, match="no scenario named"):
        await grade_walker(first_page_only, only=["nope"])
