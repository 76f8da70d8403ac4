"""In-process: the checks of tests/stdio/test_bundles.py's subject that start no process."""
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
