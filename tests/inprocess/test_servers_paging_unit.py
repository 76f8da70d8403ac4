"""In-process: the checks of tests/stdio/test_servers_paging.py's subject that start no process."""
import json
import pytest

from course_lib import servers
from course_lib.paths import fixture

pytestmark = pytest.mark.anyio

ORACLE = json.loads(fixture("servers", "paging.json").read_text(encoding="utf-8"))
PAGED = ORACLE["servers"]


def test_the_oracle_pages_every_list_at_least_twice():
    assert len(ORACLE["layout"]) >= 2
    for server, entry in PAGED.items():
        for kind, expected in entry["lists"].items():
            assert len(expected["pages"]) == len(ORACLE["layout"]), (server, kind)
            assert sum(expected["pages"]) == len(expected["names"]), (server, kind)
