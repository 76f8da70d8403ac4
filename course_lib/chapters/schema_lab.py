"""The output-schema cache lab: scenarios on the ``schema`` server, fixed oracles, probes, mutants.

Every scenario starts real ``schema`` servers (``fixtures/schema/NAME.json``), records what the
client saw (``observed``) and what each server received (its ``audit.json``), and is checked
against two oracles written by hand before any run:

* ``fixtures/schema/expected.json``        what the client must observe, per scenario;
* ``fixtures/schema/expected-audits.json`` exactly which requests each server must receive.

An entry may hold ``{"by_era": {"legacy": ..., "2026-07-28": ...}}`` where the eras differ.
"""
from __future__ import annotations

import difflib
import json
import logging
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field

from course_lib.refresh import candidate
from course_lib.walker import Catalog, walk
from course_lib.display import Table
from course_lib.errors import CatalogError
from course_lib.labs import Lab, connect
from course_lib.chapters.negative_controls import Binding, Mutant, require
from course_lib.paths import FIXTURES

FIXTURE_DIR = FIXTURES / "schema"
SEED_SCENARIOS = ("in_place_integer", "in_place_no_schema", "isolated_failed_candidate",
                  "isolated_retains_validation", "accepted_candidate", "accepted_candidate_validates")
SDK2_SCENARIOS = ("pruned", "page2_before_listing", "page2_after_walk", "cache_reabsorb")
SCENARIOS = SEED_SCENARIOS + SDK2_SCENARIOS
# A generous per-request budget: the chapter runs several servers at once (and the negative
# controls run whole copies of the course), which is slow on a shared machine.
BUDGET = {"request_timeout": 30.0}


def fixture(name: str):
    path = FIXTURE_DIR / f"{name}.json"
    if not path.exists():
        raise FileNotFoundError(f"no fixture fixtures/schema/{name}.json")
    return path


def call_content(name: str):
    return json.loads(fixture(name).read_text(encoding="utf-8"))["call_content"]


def _for_era(entry: dict, era: str) -> dict:
    return entry["by_era"][era] if "by_era" in entry else entry


def expected(scenario: str, era: str) -> dict:
    """The hand-written expectation of one scenario in one era."""
    return _for_era(json.loads((FIXTURE_DIR / "expected.json").read_text(encoding="utf-8"))[scenario], era)


def expected_audits(scenario: str, era: str) -> dict:
    """The hand-written request audits of one scenario's servers, by role."""
    return _for_era(json.loads((FIXTURE_DIR / "expected-audits.json").read_text(encoding="utf-8"))[scenario], era)


# -- small observations -----------------------------------------------------------------------

async def call_outcome(lab: Lab, name: str = "alpha") -> dict:
    """Call the tool; ``accepted`` with its structured content, or the client's schema error.

    A ``client_schema_error`` is raised by the client *after* the server answered: the tool ran.
    """
    try:
        result = await lab.client.call_tool(name, {})
    except RuntimeError as exc:
        require(str(exc).startswith(f"Invalid structured content returned by tool {name}:"),
                "client_schema_error", f"unexpected client error: {exc}")
        cause = exc.__cause__
        return {"status": "client_schema_error", "error": getattr(cause, "message", str(exc))}
    require(not result.is_error, "tool_result", "the fixture returned an unexpected tool error")
    return {"status": "accepted", "content": result.structured_content}


def snapshot(catalog: Catalog) -> list[dict]:
    return [item.model_dump(mode="json", exclude_none=True) for item in catalog.items]


def accepts(schema: dict | None, payload) -> bool:
    """Does ``schema`` (checked on its own, outside the SDK) accept ``payload``?"""
    from jsonschema import Draft202012Validator  # slow first import: only where it is needed

    return schema is None or Draft202012Validator(schema).is_valid(payload)


def tools_list_requests(lab: Lab) -> int:
    """tools/list requests on the wire so far (explicit pages and any the SDK sent itself)."""
    return len(lab.wire.requests("tools/list"))


def audit_of(lab: Lab) -> dict:
    return json.loads(lab.file("audit.json"))


async def rejected_refresh(lab: Lab) -> str:
    """Walk again on the same session; the fixture makes the refresh a rejected one."""
    try:
        await walk(lab)
    except CatalogError as exc:
        return exc.reason
    require(False, "refresh_rejected", "bad catalog accepted: the refresh repeats a tool name")


class Opener:
    """``open_candidate()`` for a context manager written in cells: ``connect(server, **options)``
    each time it is called, remembering the last lab so that a scenario can read it afterwards."""

    def __init__(self, server, **options):
        self.server, self.options, self.lab = server, options, None

    @asynccontextmanager
    async def __call__(self):
        async with connect(self.server, **self.options) as lab:
            self.lab = lab
            yield lab

    @property
    def closed(self) -> bool:
        return self.lab is None or self.lab.returncode is not None


def _candidate(era: str, name: str, refresh=None):
    """(the context manager, what shows its lab and ``closed``): ``candidate`` unless ``refresh``,
    a context manager written in cells called as ``refresh(open_candidate)``, is given."""
    if refresh is None:
        made = candidate("schema", fixture=fixture(name), era=era, **BUDGET)
        return made, made
    opener = Opener("schema", fixture=fixture(name), era=era, **BUDGET)
    return refresh(opener), opener


async def refresh_must_fail(era: str, name: str, *, active: Lab | None = None, refresh=None):
    """Returns ``(reason, candidate, active_untouched)``."""
    # A candidate refresh that must be rejected: closed before the error, nothing yielded.
    frames_before = None if active is None else len(active.wire)
    manager, refresh = _candidate(era, name, refresh)
    yielded = False
    reason = None
    try:
        async with manager:
            yielded = True
    except CatalogError as exc:
        require(refresh.closed, "candidate_closed_before_error",
                "candidate process still running when its error arrived")
        reason = exc.reason
    require(not yielded, "candidate_never_yields", "candidate unexpectedly yielded an incomplete catalog")
    untouched = active is None or len(active.wire) == frames_before
    require(untouched, "active_untouched", "the candidate refresh sent frames on the active session")
    return reason, refresh, untouched


# -- the scenarios ---------------------------------------------------------------------------

@dataclass
class Run:
    """One scenario in one era: what the client observed and what each server received."""

    scenario: str
    era: str
    observed: dict
    audits: dict = field(default_factory=dict)
    labs: dict = field(default_factory=dict)


async def _in_place(name: str, era: str) -> Run:
    async with connect("schema", fixture=fixture(name), era=era, **BUDGET) as lab:
        saved = await walk(lab)
        before = snapshot(saved)
        refresh = await rejected_refresh(lab)
        call = await call_outcome(lab)
        schema = saved.items[0].output_schema
        observed = {"saved_schema_type": schema["properties"]["value"]["type"],
                    "saved_snapshot_unchanged": snapshot(saved) == before,
                    "refresh": refresh, "call": call,
                    "saved_schema_accepts_payload": accepts(schema, call_content(name))}
    return Run(name, era, observed, {"server": audit_of(lab)}, {"server": lab})


async def _isolated(scenario: str, era: str, active_name: str, refresh=None) -> Run:
    async with connect("schema", fixture=fixture(active_name), era=era, **BUDGET) as active:
        saved = await walk(active)
        before = snapshot(saved)
        first = await call_outcome(active)
        reason, refresh, untouched = await refresh_must_fail(era, "candidate", active=active, refresh=refresh)
        observed = {"before_call": first, "refresh": reason,
                    "candidate_closed_before_active_call": refresh.closed,
                    "active_untouched_by_candidate": untouched}
        observed["saved_snapshot_unchanged"] = snapshot(saved) == before
        observed["after_call"] = await call_outcome(active)
    return Run(scenario, era, observed, {"active": audit_of(active), "candidate": audit_of(refresh.lab)},
               {"active": active, "candidate": refresh.lab})


async def _accepted(scenario: str, era: str, name: str, refresh=None) -> Run:
    manager, refresh = _candidate(era, name, refresh)
    async with manager as ready:
        observed = {"names": ready.catalog.names, "page_sizes": list(ready.catalog.page_sizes),
                    "call": await call_outcome(refresh.lab)}
    observed["closed_after_context"] = refresh.closed
    return Run(scenario, era, observed, {"candidate": audit_of(refresh.lab)}, {"candidate": refresh.lab})


async def _pruned(era: str) -> Run:
    async with connect("schema", fixture=fixture("pruned"), era=era, **BUDGET) as lab:
        first = await walk(lab)
        second = await walk(lab)  # complete single page without alpha: 2.3.0 prunes alpha's schema
        sent = tools_list_requests(lab)
        call = await call_outcome(lab)
        observed = {"first_walk": first.names, "second_walk": second.names, "call": call,
                    "implicit_tools_list": tools_list_requests(lab) - sent}
    return Run("pruned", era, observed, {"server": audit_of(lab)}, {"server": lab})


async def _page2(scenario: str, era: str, walk_first: bool) -> Run:
    async with connect("schema", fixture=fixture("page2"), era=era, **BUDGET) as lab:
        observed = {}
        if walk_first:
            observed["names"] = (await walk(lab)).names
        sent = tools_list_requests(lab)
        observed["call"] = await call_outcome(lab)
        observed["implicit_tools_list"] = tools_list_requests(lab) - sent
    return Run(scenario, era, observed, {"server": audit_of(lab)}, {"server": lab})


async def _cache_reabsorb(era: str) -> Run:
    async with connect("schema", fixture=fixture("cache_reabsorb"), era=era, **BUDGET) as lab:
        await lab.client.list_tools()   # page 1 via the Client: may be kept in its response cache
        await lab.session.list_tools()  # the session sees alpha become an integer
        await lab.client.list_tools()   # a cache hit re-absorbs the old listing into the session
        observed = {"wire_tools_list": tools_list_requests(lab), "call": await call_outcome(lab)}
    return Run("cache_reabsorb", era, observed, {"server": audit_of(lab)}, {"server": lab})


async def run(scenario: str, era: str = "legacy", refresh=None) -> Run:
    """Run one scenario in one era on real servers (nothing is compared yet).

    ``refresh``: a candidate context manager written in cells, called as ``refresh(open_candidate)``;
    the candidate scenarios use it instead of ``course_lib.refresh.candidate``.
    """
    if scenario in ("in_place_integer", "in_place_no_schema"):
        return await _in_place(scenario, era)
    if scenario == "isolated_failed_candidate":
        return await _isolated(scenario, era, "active", refresh)
    if scenario == "isolated_retains_validation":
        return await _isolated(scenario, era, "active_invalid", refresh)
    if scenario == "accepted_candidate":
        return await _accepted(scenario, era, "candidate_success", refresh)
    if scenario == "accepted_candidate_validates":
        return await _accepted(scenario, era, "candidate_success_invalid", refresh)
    if scenario == "pruned":
        return await _pruned(era)
    if scenario in ("page2_before_listing", "page2_after_walk"):
        return await _page2(scenario, era, walk_first=scenario == "page2_after_walk")
    if scenario == "cache_reabsorb":
        return await _cache_reabsorb(era)
    raise ValueError(f"unknown scenario {scenario!r}; known: {', '.join(SCENARIOS)}")


# -- exact comparison ------------------------------------------------------------------------

def _request(entry: dict) -> str:
    detail = ", ".join(f"{k}={v!r}" for k, v in entry.items() if k != "method")
    return f"{entry.get('method')} {detail}".strip()


def audit_differences(expected_audit: dict, observed_audit: dict) -> list[str]:
    """Every difference between two audits, in words; empty when they are identical."""
    want = [_request(r) for r in expected_audit.get("requests", [])]
    got = [_request(r) for r in observed_audit.get("requests", [])]
    out = []
    matcher = difflib.SequenceMatcher(a=want, b=got, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op in ("insert", "replace"):
            out += [f"extra request #{j + 1}: {got[j]}" for j in range(j1, j2)]
        if op in ("delete", "replace"):
            out += [f"missing request #{i + 1}: {want[i]}" for i in range(i1, i2)]
    if observed_audit.get("closed") != expected_audit.get("closed"):
        out.append(f"closed is {observed_audit.get('closed')!r}, expected {expected_audit.get('closed')!r}")
    return out


def compare_audits(expected_by_role: dict, observed_by_role: dict, label: str = "") -> None:
    """Exact comparison; the first difference fails the ``audit_oracle`` check."""
    for role in sorted(set(expected_by_role) | set(observed_by_role)):
        if role not in observed_by_role or role not in expected_by_role:
            require(False, "audit_oracle", f"{label}{role}: audit present on one side only")
        differences = audit_differences(expected_by_role[role], observed_by_role[role])
        require(not differences, "audit_oracle", f"{label}{role}: {'; '.join(differences)}")


def check(result: Run) -> None:
    """Compare one run with both fixed oracles; every server's finalizer must have run."""
    for role, audit in result.audits.items():
        require(audit.get("closed") is True, "finalizer_ran", f"{result.scenario}/{role}: the server's finalizer did not run")
    want = expected(result.scenario, result.era)
    require(result.observed == want, "case_oracle",
            f"{result.scenario} [{result.era}] differs from expected.json: observed {json.dumps(result.observed)}")
    compare_audits(expected_audits(result.scenario, result.era), result.audits, f"{result.scenario}/")


async def run_and_check(scenario: str, era: str = "legacy") -> Run:
    result = await run(scenario, era)
    check(result)
    return result


def outcome(call: dict) -> str:
    if call["status"] == "accepted":
        return f"accepted {json.dumps(call['content'])}"
    return f"client_schema_error: {call['error']}"


def runs_table(runs: list[Run]) -> Table:
    """One row per run: scenario, the decisive call, whether it matches both oracles.

    Runs of one era get the era as the table's title; runs of several eras get an era column.
    """
    runs = list(runs)
    eras = sorted({r.era for r in runs})
    rows = []
    for r in runs:
        call = r.observed.get("call") or r.observed.get("after_call")
        try:
            check(r)
            verdict = "match"
        except Exception as exc:  # shown, not hidden: a mismatch is a finding
            verdict = str(exc)
        rows.append([r.scenario, *([r.era] if len(eras) > 1 else []), outcome(call), verdict])
    if len(eras) > 1:
        return Table(["scenario", "era", "call alpha", "both oracles"], rows)
    return Table(["scenario", "call alpha", "both oracles"], rows, title=f"era: {eras[0]}" if eras else None)


@contextmanager
def sdk_log():
    """The SDK client's log lines (its logger ``client``) while the block runs, kept in a list
    instead of reaching the kernel's stderr."""
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            lines.append(record.getMessage())

    logger, handler = logging.getLogger("client"), Keep(logging.WARNING)
    propagate, logger.propagate = logger.propagate, False
    logger.addHandler(handler)
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


# -- probes and mutants (negative controls) --------------------------------------------------

async def probe_in_place() -> None:
    await run_and_check("in_place_integer")


async def probe_failed_candidate() -> str:
    """Returns the reason the candidate was refused (``duplicate_name`` or this raises)."""
    reason, _, _ = await refresh_must_fail("legacy", "candidate")
    require(reason == "duplicate_name", "candidate_rejected", f"candidate failed for another reason: {reason}")
    return reason


class CallerBug(Exception):
    """What a caller's own mistake inside a candidate block looks like in the probe."""


async def probe_caller_failure():
    """Returns the closed candidate."""
    refresh = candidate("schema", fixture=fixture("candidate_success"), era="legacy", **BUDGET)
    propagated = False
    try:
        async with refresh as ready:
            require(ready.catalog.names == ["alpha", "beta"], "candidate_complete", "incomplete candidate")
            raise CallerBug("the caller's own failure")
    except CallerBug:
        propagated = True
    require(propagated, "caller_failure_propagates", "caller failure was swallowed by the candidate")
    require(refresh.closed, "candidate_closed_after_caller_failure", "candidate process still running")
    return refresh


async def probe_accepted_candidate() -> None:
    await run_and_check("accepted_candidate")


def probe_asserts_run() -> None:
    """The control of a ``python -O`` run: an ``assert`` is compiled away there, a ``require`` is not."""
    ran = []
    assert ran.append(True) is None
    require(ran, "asserts_run", "assert statements were compiled away (python -O)")


# Each mutant rebinds a name its module keeps through refactors (``negative_controls.Binding``).
MUTANTS = [
    Mutant("ignore_duplicates", "course_lib/walker.py", Binding("walk"), """
        async def walk(source, kind="tools", *, max_pages=32, max_items=10_000):
            import mcp_types as types
            from course_lib.walker import Catalog

            items, sizes, cursor = [], [], None
            for _ in range(max_pages):  # every cursor rule kept, no memory of names
                params = None if cursor is None else types.PaginatedRequestParams(cursor=cursor)
                page = await source.session.list_tools(params=params)
                items += page.tools
                sizes.append(len(page.tools))
                cursor = page.next_cursor
                if cursor is None:
                    return Catalog(kind, tuple(items), tuple(sizes))
            raise RuntimeError("no last page")
        """,
           "course_lib.chapters.schema_lab:probe_in_place", "refresh_rejected", "bad catalog accepted",
           "the walker forgets to reject a name seen on an earlier page"),
    Mutant("publish_first_page", "course_lib/refresh.py", Binding("walk"), """
        async def walk(source, kind="tools", **limits):
            from course_lib.walker import Catalog

            page = await source.session.list_tools()
            return Catalog(kind, tuple(page.tools), (len(page.tools),))
        """,
           "course_lib.chapters.schema_lab:probe_failed_candidate", "candidate_never_yields",
           "candidate unexpectedly yielded",
           "the candidate hands out page 1 as if it were the catalog"),
    Mutant("swallow_catalog_rejection", "course_lib/refresh.py", Binding("walk"), """
        async def walk(source, kind="tools", **limits):
            from course_lib.walker import Catalog

            try:
                return await original(source, kind, **limits)
            except Exception:
                return Catalog(kind, (), ())
        """,
           "course_lib.chapters.schema_lab:probe_failed_candidate", "candidate_never_yields",
           "candidate unexpectedly yielded",
           "the candidate catches the walk's error and yields an empty catalog"),
    Mutant("swallow_caller_failure", "course_lib/refresh.py", Binding("Candidate.__aexit__"), """
        async def __aexit__(self, exc_type, exc, tb):
            await original(self, exc_type, exc, tb)
            return True
        """,
           "course_lib.chapters.schema_lab:probe_caller_failure", "caller_failure_propagates",
           "caller failure was swallowed",
           "the candidate's exit suppresses the caller's exception"),
    Mutant("close_after_raising", "course_lib/refresh.py", Binding("Candidate.__aenter__"), """
        async def __aenter__(self):
            from contextlib import AsyncExitStack
            from course_lib.labs import connect
            from course_lib.walker import walk

            stack = AsyncExitStack()
            self.lab = await stack.enter_async_context(connect(self.server, **self.connect_options))
            catalog = await walk(self.lab, self.kind)  # its error leaves with the process still running
            self._stack = stack
            return Ready(self.lab, catalog)
        """,
           "course_lib.chapters.schema_lab:probe_failed_candidate", "candidate_closed_before_error",
           "candidate process still running",
           "the walk's error escapes before the candidate's process is stopped"),
    Mutant("audit_skips_cursor_pages", "course_lib/servers/schema.py", Binding("build"), """
        def build(fixture, audit):
            class FirstPagesOnly:  # records every request except a page asked for by cursor
                def record(self, **entry):
                    if entry.get("cursor") is None:
                        audit.record(**entry)

            return original(fixture, FirstPagesOnly())
        """,
           "course_lib.chapters.schema_lab:probe_accepted_candidate", "audit_oracle",
           "missing request #2: tools/list cursor='next'",
           "the server's audit omits cursor pages; only an exact comparison notices"),
]


# -- views for the chapter -------------------------------------------------------------------

def _schema_word(tool: dict) -> str:
    schema = tool.get("outputSchema")
    return f"{tool['name']}:{schema['properties']['value']['type']}" if schema else f"{tool['name']}:(no schema)"


def fixture_table(name: str) -> Table:
    """The fixture's answers in order: the cursor each request must carry and what it gets."""
    data = json.loads(fixture(name).read_text(encoding="utf-8"))
    rows = []
    for number, step in enumerate(data["pages"], 1):
        result = step["result"]
        extra = f"ttlMs={result['ttlMs']}" if "ttlMs" in result else ""
        rows.append([number, json.dumps(step["cursor"]), ", ".join(_schema_word(t) for t in result["tools"]),
                     json.dumps(result.get("nextCursor")), extra])
    rows.append(["call", "", "alpha {}", "", f"returns {json.dumps(data['call_content'])}"])
    return Table(["answer", "cursor", "tools (output type)", "nextCursor", "note"], rows, title=f"fixtures/schema/{name}.json")


def audit_table(audits: dict) -> Table:
    """Every request each server recorded, in order, and whether its finalizer ran."""
    rows = []
    for role, audit in audits.items():
        for number, entry in enumerate(audit["requests"], 1):
            rows.append([role, number, _request(entry)])
        rows.append([role, "", f"closed={audit['closed']}"])
    return Table(["server", "#", "request"], rows)
