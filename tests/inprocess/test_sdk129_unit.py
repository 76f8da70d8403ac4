"""In-process: the checks of tests/stdio/test_sdk129.py's subject that start no process."""
from __future__ import annotations
import pytest

from course_lib import sdk129
from course_lib.paths import ROOT
CONSTRAINTS = ROOT / ".ci" / "constraints-sdk129.txt"


def test_the_peer_environment_is_pinned_exactly():
    lines = [l for l in CONSTRAINTS.read_text().splitlines() if l.strip() and not l.startswith("#")]
    assert "mcp==1.29.0" in lines
    assert all("==" in l for l in lines), [l for l in lines if "==" not in l]


def test_an_unknown_server_name_and_a_missing_environment_are_typed_errors(monkeypatch, tmp_path):
    with pytest.raises(ValueError, match="no SDK 1.29.0 server named"):
        sdk129.server_argv("catalog")
    monkeypatch.setattr(sdk129, "VENV", tmp_path / "absent")
    with pytest.raises(sdk129.PeerMissing, match="make lab"):
        sdk129.python()
