"""The pinned real servers of chapter 07 under the audit.

Each server's card equals its expected card, written by hand in ``fixtures/audit/real/NAME.json``
before the run, in each era: no crash (every audit returns a report), no process left over (the
report's own sweep and the run's leak check). ``auto`` is chapter 07's own run: its cell audits every
server in ``auto`` against the same cards (``real_cards.differences``: its last line counts the cards
equal to their fixture), and strict nbval fails when a card differs, when a process is left over
(``exit.leftovers`` is a line of the card) or when ``auto`` lands in another era (the card's lines
are that era's). That run checks the era ``auto`` lands in, line for line; this file audits each
server in the other era, restricted to it, so that every era of every card is checked once in the
suite. The servers' interpreter and the
Node peers are part of the set-up: when they are missing these tests fail with the commands that
install them, never skip.
"""
import asyncio
import inspect
import json
from pathlib import Path

import nbformat
import pytest

from course_lib.chapters import real_cards, real_servers, servers_env
from course_lib.protocol import AUTO, LEGACY, MODERN_VERSION
from course_lib.grading.runner import lab_servers
from course_lib.paths import NOTEBOOKS

CHAPTER = NOTEBOOKS / "07_real_software.ipynb"
CARDS = {path.stem: json.loads(path.read_text()) for path in sorted(real_cards.CARDS_DIR.glob("*.json"))}
ERAS = (LEGACY, MODERN_VERSION)  # and AUTO: chapter 07's cell (see the docstring)
AT_ONCE = 2  # audits side by side (each runs up to three probes at a time)
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


def test_every_real_server_audits_to_its_card_in_the_era_auto_leaves_to_this_file():
    servers_env.SERVERS_ENV.python()  # fails with the install command when the interpreter is missing
    real_servers.versions()  # and when a server is off its pin
    jobs = [(name, era) for name in CARDS for era in ERAS if era != CARDS[name]["eras"][AUTO]]
    assert {era for _, era in jobs} == set(ERAS)  # each era is restricted to on some server

    async def all_audits():
        gate = asyncio.Semaphore(AT_ONCE)

        async def one(name, era):
            async with gate:
                return await real_cards.audited(name, era)

        return await asyncio.gather(*(one(*job) for job in jobs), return_exceptions=True)

    reports = asyncio.run(all_audits())
    crashed = [f"{name} ({era}): {type(r).__name__}: {r}" for (name, era), r in zip(jobs, reports)
               if isinstance(r, BaseException)]
    assert not crashed, "\n".join(crashed)
    wrong = []
    for (name, era), report in zip(jobs, reports):
        wrong += [f"{name} ({era}) {line}" for line in real_cards.differences(name, report, era)]
        if report.leftovers:
            wrong.append(f"{name} ({era}): processes left over {report.leftovers}")
    assert not wrong, "\n".join(wrong)
    assert lab_servers() == set()  # nothing below this process (other workers' labs run meanwhile)


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


@pytest.mark.parametrize("name", sorted(real_servers.BY_NAME))
def test_every_real_server_starts_without_the_network(name):
    """The safety of the chapter, per server: a dead proxy, no phone-home, its own HOME, and a
    temporary folder that is gone afterwards."""
    with real_servers.prepared(name) as server:
        folder = server.cwd
        assert server.env["HTTPS_PROXY"] == server.env["HTTP_PROXY"] == real_servers.DEAD_PROXY
        # what chapter 07 once showed as a table: a proxy at the discard port, where nothing listens
        assert {k: server.env[k] for k in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")} == {
            "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
            "ALL_PROXY": "http://127.0.0.1:9", "NO_PROXY": ""}
        assert server.env["HOME"].startswith(folder)
        if name.startswith("fastmcp"):
            assert server.env["FASTMCP_CHECK_FOR_UPDATES"] == "off"
            assert server.env["FASTMCP_SHOW_SERVER_BANNER"] == "false"
            assert ("--page-size" in server.argv) == (name == "fastmcp-paged")
        if name == "time":
            assert server.argv[-2:] == ["--local-timezone", "UTC"]
        if name == "memory":
            assert server.env["MEMORY_FILE_PATH"].startswith(folder)
        if name == "fetch":
            assert server.argv[-2:] == ["--proxy-url", real_servers.DEAD_PROXY]
        if name == "git":
            repo = server.argv[server.argv.index("--repository") + 1]
            assert repo.startswith(folder) and (Path(repo) / ".git").is_dir()
    assert not Path(folder).exists()
