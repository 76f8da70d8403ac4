"""In-process: the checks of tests/stdio/test_servers_paging.py's subject that start no process.

The course servers that list resources, templates or prompts page them like the catalog pages tools.

The oracle is ``fixtures/servers/paging.json``, written by hand: with ``--pages 1,0,2`` every
list of atlas, shelf (classic) and snapshot comes in exactly three pages, and the walker reads
the complete list, in both eras. A cursor a list did not issue (made up, or issued by another
list of the same server) is -32602 and the list still serves its own cursors afterwards.
Without ``--pages`` every list is one page, as the chapters use them. Every server whose
capabilities name resources answers ``resources/templates/list``, never -32601.
"""
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
