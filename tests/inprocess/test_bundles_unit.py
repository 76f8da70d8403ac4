"""In-process: the checks of tests/stdio/test_bundles.py's subject that start no process.

Every named check of the bundle reader refuses a real snapshot server that breaks exactly its rule.

The rows are hand-written in fixtures/snapshot/checks.json: a scenario, one ``--fault`` of the
snapshot server, and the check ``bundles.acquire`` must name. The same scenarios without a fault
are accepted, so each refusal comes from the fault alone.
"""
import json

import pytest

from course_lib import bundles
from course_lib.paths import fixture
from course_lib.servers import snapshot as snapshot_server

pytestmark = pytest.mark.anyio

ROWS = json.loads(fixture("snapshot", "checks.json").read_text(encoding="utf-8"))


def test_every_named_check_and_every_reader_fault_has_a_row():
    refused = ROWS["refused"]
    assert {row["check"] for row in refused} == set(bundles.CHECKS)
    assert set(snapshot_server.READER_FAULTS) <= {row["fault"] for row in refused}
