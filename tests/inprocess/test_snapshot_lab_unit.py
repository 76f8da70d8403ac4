"""In-process: the checks of tests/stdio/test_snapshot_lab.py's subject that start no process."""
import json

import pytest

from course_lib import bundles
from course_lib.chapters import snapshot_controls, snapshot_lab
from course_lib.bundles import BundleError, Manifest
from course_lib.paths import fixture
from course_lib.servers import snapshot as snapshot_server

pytestmark = pytest.mark.anyio

ORACLE = json.loads(fixture("snapshot", "expected.json").read_text(encoding="utf-8"))
R1 = list(ORACLE["r1"])
R2 = list(ORACLE["r2"])


async def test_a_wrong_check_or_a_surviving_control_is_not_a_kill():
    control = snapshot_controls.CONTROLS[0]
    survivor = snapshot_lab.Report("expired", "legacy", control.fault, "refresh", returncode=0)
    assert snapshot_controls.judge(control, survivor).verdict == "survived"
    elsewhere = snapshot_lab.Report("expired", "legacy", control.fault, "refresh", returncode=0,
                                    failure=BundleError("snapshot_oracle", "answered (the r2 text)"))
    assert snapshot_controls.judge(control, elsewhere).verdict == "wrong_check"
    unclean = snapshot_lab.Report("expired", "legacy", control.fault, "refresh", returncode=-15,
                                  failure=snapshot_lab.CheckFailed(control.check, control.message))
    assert snapshot_controls.judge(control, unclean).verdict == "unclean_exit"


# -- the bundle checks on their own ----------------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ("not json", "not JSON"),
    ('{"revision": "r1"}', "exactly the keys"),
    ('{"revision": "r1", "uris": [], "extra": 1}', "exactly the keys"),
    ('{"revision": "", "uris": ["project://atlas/r1/design"]}', "non-empty string"),
    ('{"revision": "r1", "uris": []}', "non-empty list"),
    ('{"revision": "r1", "uris": [7]}', "non-empty list"),
])
def test_manifest_shape_is_checked(text, message):
    with pytest.raises(BundleError) as caught:
        bundles.parse_manifest(text)
    assert caught.value.check == "manifest_shape" and message in caught.value.message


@pytest.mark.parametrize("uris, previous, message", [
    (["project://atlas/r2/requirements", "project://atlas/latest/design"], None, "latest/design not pinned to r2"),
    (["project://atlas/r2/requirements", "project://atlas/r1/design"], None, "r1/design not pinned to r2"),
    (["project://atlas/r2/design", "project://atlas/r2/design"], None, "lists a URI twice"),
    (["project://atlas/r2/design", "project://atlas/r2/requirements"], None, "the oracle"),
    (["project://atlas/r2/requirements"], None, "the oracle"),
])
def test_manifest_membership_is_exact(uris, previous, message):
    with pytest.raises(BundleError) as caught:
        bundles.check_membership(Manifest("r2", tuple(uris)), {"r2": ORACLE["r2"]}, previous)
    assert caught.value.check == "manifest_membership" and message in caught.value.message


def test_recovery_must_cover_the_same_documents_without_an_oracle():
    bundles.check_membership(Manifest("r2", tuple(R2)), None, Manifest("r1", tuple(R1)))
    with pytest.raises(BundleError, match="covers"):
        bundles.check_membership(Manifest("r2", tuple(R2[:1])), None, Manifest("r1", tuple(R1)))


def test_server_accepts_scenario_and_mode_and_refuses_unknown_ones():
    with pytest.raises(SystemExit):
        snapshot_server.main(["--scenario", "bogus"])
    with pytest.raises(SystemExit):
        snapshot_server.main(["--mode", "mixed", "--fault", "bogus"])
    assert set(snapshot_server.SCENARIOS) == set(snapshot_lab.SCENARIOS)
    assert {c.fault for c in snapshot_controls.CONTROLS} == set(snapshot_server.FAULTS) - {"none"}
