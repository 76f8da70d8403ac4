"""Chapter 04's prediction check, live: every client of the battery runs on the catalog modes
``large`` and ``failing`` behind the tap, and each cell equals the hand-written
``fixtures/peers/prediction.json`` (a peer upgrade that changes a cell fails here), with nothing
left running."""
import json
from importlib.metadata import version

import psutil
import pytest

from course_lib.chapters import peers_lab
from course_lib.chapters.servers_env import SERVERS_ENV
from course_lib.grading.prediction import measure_all
from course_lib.paths import FIXTURES

pytestmark = pytest.mark.anyio
FIXTURE = json.loads((FIXTURES / "peers" / "prediction.json").read_text())


def started() -> list[int]:
    """The processes below this one, but the fast launcher's fork server (it serves every lab)."""
    found = []
    for p in psutil.Process().children(recursive=True):
        try:
            if "fastlaunch" not in " ".join(p.cmdline()):
                found.append(p.pid)
        except psutil.Error:
            continue
    return found


async def test_every_client_measured_live_holds_to_the_fixture():
    pinned = {**peers_lab.pins(), "fastmcp": SERVERS_ENV.pins()["fastmcp"], "mcp": version("mcp")}
    assert FIXTURE["versions"] == {name: pinned[name] for name in FIXTURE["versions"]}
    before = set(started())
    measured = await measure_all()
    wrong = [f"{client} / {mode}: the fixture says {cell!r}, the run gave {measured[client][mode]!r}"
             for client, cells in FIXTURE["cells"].items() for mode, cell in cells.items()
             if measured[client][mode] != cell]
    assert not wrong, "\n".join(wrong)
    assert list(measured) == list(FIXTURE["cells"])
    assert set(started()) - before == set(), "a client run left a process running"
