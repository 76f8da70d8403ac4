"""The snapshot chapter's scenario runs, their named checks, and what reached the server.

``run_scenario`` starts the snapshot server in one scenario (and optionally one known-wrong
fault), walks that scenario's fixed sequence of requests, and stops at the first check that
fails. Expectations come only from ``fixtures/snapshot/expected.json`` (written by hand),
never from the server module. The process is judged after it has exited: exit code 0, no
stray stdout, nothing on stderr.

Scenario checks (the bundle checks of ``course_lib.bundles`` come on top):

``initial_manifest``      the first manifest names r1
``mixed_counterexample``  the two latest/ reads are the fixed mix, which is neither r1 nor r2
``current_advanced``      a new acquisition after the switch yields r2, without a restart
``expired_resource``      a pinned read of the dropped r1 fails with -31001 (SNAPSHOT_UNAVAILABLE) and the exact message
``expired_prompt``        the r1 prompt after the drop fails the same way, never embeds r2
``single_recovery``       starting from the dropped r1 manifest: exactly one restart, ending at r2
``prompt_arguments``      a prompt request without exactly one ``revision`` is -32602
``unknown_revision``      a pinned URI of a revision never published is -31001
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from mcp import MCPError

from course_lib import bundles
from course_lib.bundles import Bundle, CacheMode
from course_lib.display import Table
from course_lib.errors import CheckFailed  # a scenario check, or a bundle check (BundleError), failed
from course_lib.labs import connect
from course_lib.paths import fixture

SCENARIOS = ("mixed", "expired", "retired")


def load_oracle() -> dict:
    return json.loads(fixture("snapshot", "expected.json").read_text(encoding="utf-8"))


@dataclass
class Report:
    """What one scenario run showed: checks passed, bundles acquired, the first failure, the exit."""

    scenario: str
    era: str
    fault: str
    cache_mode: str
    passed: list[str] = field(default_factory=list)
    bundles: list[Bundle] = field(default_factory=list)
    failure: CheckFailed | None = None
    returncode: int | None = None
    stray_stdout_lines: int = 0
    stderr_bytes: int = 0
    wire: object = None

    @property
    def clean_exit(self) -> bool:
        return (self.returncode, self.stray_stdout_lines, self.stderr_bytes) == (0, 0, 0)

    @property
    def outcome(self) -> str:
        if self.failure is None:
            return "ok " + " → ".join(f"{a.revision}:{a.outcome}" for b in self.bundles for a in b.attempts)
        return f"refused [{self.failure.check}] {self.failure.message}"


class _Run:
    """The checks of one run; each passed check is recorded by name, in order."""

    def __init__(self, lab, oracle: dict, report: Report, cache_mode: CacheMode):
        self.lab, self.oracle, self.report, self.cache_mode = lab, oracle, report, cache_mode
        self.snapshots = {rev: oracle[rev] for rev in ("r1", "r2")}

    def check(self, condition: object, name: str, message: str) -> None:
        if not condition:
            raise CheckFailed(name, message)
        self.report.passed.append(name)

    async def manifest(self) -> bundles.Manifest:
        m = await bundles.read_manifest(self.lab, self.cache_mode)
        self.report.passed.append("manifest_shape")
        return m

    async def acquire(self, **kw) -> Bundle:
        bundle = await bundles.acquire(self.lab, oracle=self.snapshots, cache_mode=self.cache_mode, **kw)
        self.report.bundles.append(bundle)
        self.report.passed.append(f"bundle {bundle.revision}")
        return bundle

    async def read_text(self, uri: str) -> str:
        result = await self.lab.client.read_resource(uri, cache_mode=self.cache_mode)
        return result.contents[0].text

    async def must_be_unavailable(self, name: str, what: str, call) -> None:
        expected = self.oracle["unavailable"]
        try:
            answer = await call()
        except MCPError as exc:
            got = {"code": exc.error.code, "message": exc.error.message}
            self.check(got == expected, name, f"{what} failed with {got}, expected {expected}")
            return
        self.check(False, name, f"{what} answered ({answer}) instead of failing with {expected['code']}")

    async def expired_checks(self, revision: str = "r1") -> None:
        uri = next(iter(self.oracle[revision]))

        async def read():
            text = await self.read_text(uri)
            which = [rev for rev, docs in self.snapshots.items() if text in docs.values()]
            return f"the {'/'.join(which) or 'unknown'} text"

        async def prompt():
            result = await self.lab.client.get_prompt(bundles.PROMPT, {"revision": revision})
            return repr(result.messages[0].content.text)

        await self.must_be_unavailable("expired_resource", f"pinned {bundles.short(uri)}", read)
        await self.must_be_unavailable("expired_prompt", f"the {revision} prompt", prompt)

    async def tail(self) -> None:
        """Arguments and unknown revisions are refused the same way in every scenario."""
        for args in self.oracle["bad_prompt_arguments"]:
            try:
                await self.lab.client.get_prompt(bundles.PROMPT, args)
                code = None
            except MCPError as exc:
                code = exc.error.code
            self.check(code == self.oracle["invalid_arguments_code"], "prompt_arguments",
                       f"prompt arguments {args} gave {code}")
        try:
            await self.read_text(self.oracle["unknown_revision_uri"])
            code = None
        except MCPError as exc:
            code = exc.error.code
        self.check(code == self.oracle["unavailable"]["code"], "unknown_revision",
                   f"{self.oracle['unknown_revision_uri']} gave {code}")

    # -- the three scenarios ----------------------------------------------------------------

    async def mixed(self) -> None:
        first = await self.manifest()
        self.check(first.revision == "r1", "initial_manifest", f"first manifest names {first.revision}")
        naive = [await self.read_text(uri) for uri in self.oracle["latest"]]
        self.check(naive == self.oracle["mixed"] and naive != list(self.oracle["r1"].values())
                   and naive != list(self.oracle["r2"].values()), "mixed_counterexample",
                   f"latest/ reads gave {naive}")
        # The pinned fix: r1 is still whole after the pointer moved.
        pinned = await bundles.verify(self.lab, first, oracle=self.snapshots, cache_mode=self.cache_mode)
        self.report.bundles.append(pinned)
        self.report.passed.append("bundle r1")
        again = await self.acquire()
        self.check(again.revision == "r2" and again.restarts == 0, "current_advanced",
                   f"a new acquisition after r2 was published gave {again.revision} ({again.restarts} restarts)")
        await self.tail()

    async def expired(self) -> None:
        first = await self.manifest()
        self.check(first.revision == "r1", "initial_manifest", f"first manifest names {first.revision}")
        await self.expired_checks()
        bundle = await self.acquire(manifest=first)
        attempts = [[a.revision, a.outcome] for a in bundle.attempts]
        self.check(attempts == self.oracle["recovery"], "single_recovery", f"attempts {attempts}")
        await self.tail()

    async def retired(self) -> None:
        first = await self.acquire()
        self.check(first.revision == "r1", "initial_manifest", f"first bundle is {first.revision}")
        await self.expired_checks()
        again = await self.acquire()
        self.check(again.revision == "r2" and again.restarts == 0, "current_advanced",
                   f"a new acquisition after r1 was retired gave {again.revision} ({again.restarts} restarts)")
        await self.tail()


async def run_scenario(scenario: str, era: str = "legacy", *, fault: str = "none", ttl_ms: int = 0,
                       cache_mode: CacheMode = "refresh", oracle: dict | None = None,
                       request_timeout: float = 30.0, lab_timeout: float = 120.0, **client_options) -> Report:
    """One real server, one scenario, every check in order; stops at the first failure."""
    if scenario not in SCENARIOS:
        raise ValueError(f"scenario must be one of {SCENARIOS}")
    oracle = oracle or load_oracle()
    report = Report(scenario, era, fault, cache_mode)
    args = ["--fault", fault] + (["--ttl-ms", str(ttl_ms)] if ttl_ms else [])
    async with connect("snapshot", mode=scenario, era=era, args=args, request_timeout=request_timeout,
                       lab_timeout=lab_timeout, **client_options) as lab:
        try:
            await getattr(_Run(lab, oracle, report, cache_mode), scenario)()
        except CheckFailed as exc:
            report.failure = exc
    report.returncode = lab.returncode
    report.stray_stdout_lines = len(lab.noise)
    report.stderr_bytes = len(lab.stderr.encode())
    report.wire = lab.wire
    return report


async def probe(scenario: str, era: str = "legacy") -> Report:
    """Run ``scenario`` and raise its first failure; a server that did not exit cleanly fails ``clean_exit``."""
    report = await run_scenario(scenario, era)
    if report.failure is not None:
        raise report.failure
    if not report.clean_exit:
        raise CheckFailed("clean_exit", f"server exit {report.returncode}, {report.stray_stdout_lines} stray "
                                        f"stdout lines, {report.stderr_bytes} stderr bytes")
    return report


# Argument-free probes (``module:function``), the form a generic mutant runner calls.
async def probe_mixed() -> Report:
    return await probe("mixed")


async def probe_expired() -> Report:
    return await probe("expired")


# -- views for the chapter (the five wrong servers are :mod:`course_lib.chapters.snapshot_controls`) --

def report_table(reports: list[Report], columns=("scenario", "era", "outcome")) -> Table:
    return Table(list(columns) + ["exit"],
                 [[getattr(r, c) for c in columns] + [r.returncode if r.clean_exit else f"UNCLEAN {r.returncode}"]
                  for r in reports])


def label(text: str, oracle: dict) -> str:
    """Which fixed revision a document text belongs to: ``r1``, ``r2`` or ``?``."""
    found = [rev for rev in ("r1", "r2") if text in oracle[rev].values()]
    return "/".join(found) or "?"


def requests_table(wire, oracle: dict, title: str | None = None) -> Table:
    """The reads and prompts that reached the server, and what each answer contained."""
    rows = []
    for n, request in enumerate(f for f in wire.requests() if f.method in ("resources/read", "prompts/get")):
        response = wire.response_to(request)
        message = (response.message if response else None) or {}
        if request.method == "resources/read":
            target = bundles.short(request.params["uri"])
        else:
            target = f"prompt {json.dumps(request.params.get('arguments'))}"
        if "error" in message:
            answer = f"error {message['error']['code']}"
        elif request.method == "resources/read":
            text = message["result"]["contents"][0]["text"]
            answer = (f"manifest {json.loads(text)['revision']}" if target == "manifest"
                      else f"{label(text, oracle)} text")
        else:
            answer = message["result"]["messages"][0]["content"]["text"]
        rows.append([n + 1, request.method, target, answer])
    return Table(["#", "method", "target", "answer"], rows, title)


def read_count(wire, texts: dict) -> int:
    """How many resources/read requests for the first URI of ``texts`` reached the server."""
    first = next(iter(texts))
    return sum(1 for f in wire.requests("resources/read") if f.params.get("uri") == first)
