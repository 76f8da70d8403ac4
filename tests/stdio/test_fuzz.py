"""Hostile input: hypothesis throws forged cursors, URIs and prompt arguments at real servers.

One server connection serves a whole hypothesis run: the lab is entered once, hypothesis
drives the examples from a worker thread, and each example awaits its request on the lab's
event loop (``anyio.from_thread.run``). Every run is bounded in count (``max_examples``) and
per request in time (the lab's request budget, which only bounds a failure: how fast an
example runs is not asserted). The rules each input is checked against are hand-written in
fixtures/fuzz/rules.json.

Every run draws the same examples (a fixed seed). A failing example is also saved to a
per-test example database under ``.hypothesis/fuzz/`` (git-ignored), and the next run tries
it first, shrunk, before anything new.
"""
import json
from urllib.parse import quote

import anyio
import anyio.from_thread
import anyio.to_thread
import mcp_types as types
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis import strategies as st
from mcp import MCPError

from course_lib import connect, walk
from course_lib.paths import ROOT

pytestmark = pytest.mark.anyio

RULES = json.loads((ROOT / "fixtures" / "fuzz" / "rules.json").read_text(encoding="utf-8"))
BUDGET = {"request_timeout": 30, "lab_timeout": 600}
BOUNDED = settings(max_examples=100, deadline=None,
                   suppress_health_check=[HealthCheck.too_slow], print_blob=True)
SEED = 20251125
EXAMPLES = ROOT / ".hypothesis" / "fuzz"

# Any text JSON can carry (lone surrogates cannot be encoded, so they are not hostile input).
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=80)


async def fuzz(strategy, check, key: str) -> int:
    """Run ``check(value)`` (async) for every example of ``strategy``; return how many ran.

    ``key`` names the example database of one test in one era.
    """
    ran = 0

    @settings(BOUNDED, database=DirectoryBasedExampleDatabase(EXAMPLES / key))
    @seed(SEED)  # under @settings: a bare @seed would switch the example database off
    @given(strategy)
    def prop(value):
        nonlocal ran
        ran += 1
        anyio.from_thread.run(check, value)

    await anyio.to_thread.run_sync(prop)
    return ran


def mutations(seed: str) -> st.SearchStrategy[str]:
    """Near misses of a real value: the kind of damage proxies, caches and people do."""
    return st.one_of(
        st.integers(0, max(len(seed) - 1, 0)).map(lambda n: seed[:n]),  # truncated
        TEXT.map(lambda tail: seed + tail).filter(lambda s: s != seed),  # extended
        st.just(seed.swapcase()), st.just(seed.upper()), st.just(" " + seed), st.just(seed + "\n"),
        st.just(quote(seed, safe="")), st.just(seed.replace("-", "_")), st.just(seed[::-1]),
        st.integers(0, max(len(seed) - 1, 0)).map(lambda i: seed[:i] + chr(ord(seed[i]) ^ 1) + seed[i + 1:]),
    ).filter(lambda s: s != seed)


# --- cursors against the catalog server -------------------------------------------------------

async def test_forged_cursors_are_invalid_params_and_the_server_keeps_serving(era):
    expected = RULES["catalog"]
    async with connect("catalog", era=era, **BUDGET) as lab:
        first = await lab.session.list_tools()
        second = await lab.session.list_tools(params=types.PaginatedRequestParams(cursor=first.next_cursor))
        issued = {first.next_cursor, second.next_cursor}

        async def check(cursor: str) -> None:
            with pytest.raises(MCPError) as caught:
                await lab.session.list_tools(params=types.PaginatedRequestParams(cursor=cursor))
            assert caught.value.error.code == expected["forged_cursor_code"], caught.value.error

        forged = st.one_of(TEXT, st.sampled_from(sorted(issued)).flatmap(mutations),
                           st.sampled_from(["", "0", "null", "page-2", "../", "\x00", "c" * 10_000]))
        ran = await fuzz(forged.filter(lambda cursor: cursor not in issued), check, f"cursors-{era}")
        # Still serving: the whole catalog, with the cursors it issued before the storm.
        assert (await walk(lab)).names == expected["names"]
        assert lab.alive
    assert ran >= 50
    # Every refusal on the wire is a proper JSON-RPC error answering its own request.
    refused = 0
    for request in lab.wire.requests("tools/list"):
        reply = lab.wire.response_to(request)
        assert reply is not None
        if request.params.get("cursor") not in issued | {None}:
            assert reply.kind == "error" and isinstance(reply.message["error"]["message"], str)
            assert reply.message["error"]["code"] == expected["forged_cursor_code"]
            refused += 1
    assert refused == ran
    assert "Traceback" not in lab.stderr


# --- URIs and prompt arguments against the atlas server ---------------------------------------

ATLAS = RULES["atlas"]
ALLOWED = ATLAS["allowlist"]

URI_DAMAGE = st.sampled_from([
    "../", "..%2f", "%2e%2e/", "%2e%2e%2f", "%252e%252e%252f", "./", "//", "/", "%00", "\x00", "?a=1", "#x",
    "%20", "+", " ", "\\", "..\\", "%5c", "%2F", "private", "/etc/passwd", "\u2025", "\uff0e\uff0e/",
])


def hostile_uris() -> st.SearchStrategy[str]:
    canonical = st.sampled_from(sorted(ALLOWED))
    base = "project://atlas/docs/"
    return st.one_of(
        canonical.flatmap(mutations),
        st.tuples(canonical, URI_DAMAGE, st.booleans()).map(
            lambda t: (t[0] + t[1]) if t[2] else base + t[1] + t[0][len(base):]),
        st.tuples(URI_DAMAGE, TEXT).map(lambda t: base + t[0] + t[1]),
        st.sampled_from(["file:///etc/passwd", "project://atlas/private", "PROJECT://atlas/docs/design",
                         "project://ATLAS/docs/design", "project:/atlas/docs/design", ""]),
        TEXT,
        canonical,  # the allowlist itself must keep working in the middle of the storm
    )


async def test_uris_never_read_outside_the_allowlist(era):
    not_found = ATLAS["not_found"]
    outcomes = {"ok": 0, "refused": 0}
    async with connect("atlas", era=era, **BUDGET) as lab:

        async def check(uri: str) -> None:
            try:
                result = await lab.session.read_resource(uri)
            except MCPError as exc:
                assert uri not in ALLOWED, f"an allowlisted URI was refused: {uri!r}"
                assert (exc.error.code, exc.error.message) == (not_found["code"][era], not_found["message"])
                assert exc.error.data == {"uri": uri}  # the URI comes back verbatim, never "fixed"
                outcomes["refused"] += 1
                return
            assert uri in ALLOWED, f"read outside the allowlist: {uri!r}"
            assert [c.uri for c in result.contents] == [uri]
            assert ALLOWED[uri] in result.contents[0].text
            outcomes["ok"] += 1

        await fuzz(hostile_uris(), check, f"uris-{era}")
        assert lab.alive
        assert len((await walk(lab, "resources")).items) == len(ALLOWED)
    assert outcomes["refused"] >= 50 and outcomes["ok"] >= 1
    audit = json.loads(lab.file("audit.json"))
    reads = [r for r in audit["requests"] if r["method"] == "resources/read"]
    assert all(r["found"] == (r["uri"] in ALLOWED) for r in reads)
    assert "Traceback" not in lab.stderr


def expected_prompt(arguments: dict) -> list[str] | None:
    """Names of the embedded documents for valid arguments, None for arguments the server must refuse."""
    rules = ATLAS["prompt"]
    if set(arguments) - {"focus", "document"} or arguments.get("focus") not in rules["focus"]:
        return None
    return rules["documents"].get(arguments.get("document", "all"))


PROMPT_ARGUMENTS = st.dictionaries(
    st.one_of(st.sampled_from(["focus", "document", "Focus", "documents", "extra", " focus"]), TEXT),
    st.one_of(st.sampled_from(["consistency", "test-gaps", "all", "requirements", "design", "release notes",
                               "release%20notes", "Design", "", "../private"]), TEXT),
    max_size=4)


async def test_prompt_arguments_are_validated(era):
    rules = ATLAS["prompt"]
    uri_of = {name: uri for uri, name in zip(ALLOWED, ["requirements", "design", "release notes"])}
    outcomes = {"ok": 0, "refused": 0}
    async with connect("atlas", era=era, **BUDGET) as lab:

        async def check(arguments: dict) -> None:
            embedded = expected_prompt(arguments)
            try:
                result = await lab.session.get_prompt(rules["name"], arguments)
            except MCPError as exc:
                assert embedded is None, f"valid arguments refused: {arguments!r}: {exc.error.message}"
                assert exc.error.code == rules["invalid_code"]
                assert exc.error.message and "\n" not in exc.error.message
                outcomes["refused"] += 1
                return
            assert embedded is not None, f"invalid arguments accepted: {arguments!r}"
            kinds = [m.content.type for m in result.messages]
            assert kinds == ["text"] + ["resource"] * len(embedded)
            assert [m.content.resource.uri for m in result.messages[1:]] == [uri_of[n] for n in embedded]
            outcomes["ok"] += 1

        valid = st.fixed_dictionaries({"focus": st.sampled_from(rules["focus"])},
                                      optional={"document": st.sampled_from(sorted(rules["documents"]))})
        await fuzz(st.one_of(PROMPT_ARGUMENTS, valid), check, f"prompts-{era}")
        assert lab.alive
    assert outcomes["refused"] >= 20 and outcomes["ok"] >= 5
    assert "Traceback" not in lab.stderr
