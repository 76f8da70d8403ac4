"""In-process: the checks of tests/stdio/test_servers_answer.py's subject that start no process."""
import json

import pytest

from course_lib import servers
from course_lib.paths import fixture

pytestmark = pytest.mark.anyio

ORACLE = json.loads(fixture("servers", "callable.json").read_text(encoding="utf-8"))["servers"]


def test_the_oracle_covers_every_server_and_mode():
    assert sorted(ORACLE) == servers.names()
    for name in servers.names():
        module = servers.load(name)
        modes = getattr(module, "MODES", None) or tuple(getattr(module, "SCENARIOS", ()))
        covered = {spec.get("mode", label) for label, spec in ORACLE[name]["modes"].items()}
        assert set(modes) <= covered, f"{name}: modes {sorted(set(modes) - covered)} are not in the oracle"
