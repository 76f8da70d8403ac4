"""In-process: the checks of tests/world/test_real_servers.py's subject that start no process."""
import inspect
import json

import nbformat
import pytest

from course_lib.chapters import real_cards, real_servers, servers_env
from course_lib.protocol import AUTO, LEGACY, MODERN_VERSION
from course_lib.paths import NOTEBOOKS

CHAPTER = NOTEBOOKS / "07_real_software.ipynb"
CARDS = {path.stem: json.loads(path.read_text()) for path in sorted(real_cards.CARDS_DIR.glob("*.json"))}
expected = real_cards.expected_lines


def test_every_real_server_has_a_card_at_its_pin():
    assert set(CARDS) == set(real_servers.BY_NAME)
    for name, card in CARDS.items():
        server = real_servers.BY_NAME[name]
        assert (card["package"], card["version"]) == (server.package, server.version), name


def test_the_restriction_keeps_each_era_apart():
    """The fixture reading itself: a legacy card has no 2026-07-28 probe line, and back."""
    card = CARDS["time"]
    legacy, modern = expected(card, LEGACY), expected(card, MODERN_VERSION)
    assert ("era.envelope", "", MODERN_VERSION) not in legacy and ("era.handshake", "", LEGACY) not in modern
    assert ("list.walk", "tools", LEGACY) in legacy and ("list.walk", "tools", LEGACY) not in modern
    assert ("list.walk", "tools", MODERN_VERSION) in modern
    # a server without 2026-07-28: only the launch, the era probe and the summary lines remain
    assert {check for check, _, _ in expected(CARDS["memory"], MODERN_VERSION)} == {
        *real_cards.LAUNCH - {"launch.answer"}, "era.envelope",
        "stdout.noise", "stdout.frames", "envelope.strict", "envelope.received", "exit.client-died", "exit.leftovers"}
    assert len(expected(CARDS["time"], AUTO)) > len(legacy)  # auto adds both era probes and lands in one


def test_the_chapter_audits_every_real_server_in_auto():
    """What this file leaves to chapter 07: a cell that audits every real server in ``auto`` (the
    default of ``real_cards.audited``) and whose stored last line, which strict nbval re-checks, says
    that every card equals its fixture."""
    assert inspect.signature(real_cards.audited).parameters["era"].default == AUTO
    (cell,) = [c for c in nbformat.read(CHAPTER, as_version=4).cells
               if c.cell_type == "code" and "real_cards.differences(name, card)" in c.source]
    assert "for_each(real_cards.audited, [s.name for s in real_servers.SERVERS]" in cell.source
    text = "".join("".join(o["text"]) for o in cell.outputs if o.get("name") == "stdout")
    assert text.splitlines()[-1] == f"cards equal to fixtures/audit/real/NAME.json: {len(CARDS)} of {len(CARDS)}"


def test_a_missing_servers_interpreter_fails_loudly_with_the_install_command(monkeypatch):
    absent = servers_env.PinnedEnv(".venv-absent", servers_env.SERVERS_ENV.constraints, servers_env.SERVERS_ENV.command)
    monkeypatch.setattr(servers_env, "SERVERS_ENV", absent)
    with pytest.raises(servers_env.ServersMissing, match="make lab") as info:
        servers_env.check()
    assert "python -m course_lib.chapters.servers_env install" in str(info.value)


def test_the_constraints_pin_every_package_the_chapter_names():
    pins = servers_env.SERVERS_ENV.pins()
    assert all(package in pins for package in servers_env.PACKAGES)
    assert pins["mcp"] == "2.3.0"
