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
import json
from pathlib import Path
import pytest

from course_lib.chapters import real_cards, real_servers, servers_env
from course_lib.protocol import AUTO, LEGACY, MODERN_VERSION
from course_lib.grading.runner import lab_servers
CARDS = {path.stem: json.loads(path.read_text()) for path in sorted(real_cards.CARDS_DIR.glob("*.json"))}
ERAS = (LEGACY, MODERN_VERSION)  # and AUTO: chapter 07's cell (see the docstring)
AT_ONCE = 2  # audits side by side (each runs up to three probes at a time)


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
