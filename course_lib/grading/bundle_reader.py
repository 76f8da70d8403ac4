"""The grader of chapter 8's exercise: a bundle reader that restarts once, on real snapshot servers.

The student writes ``async def my_acquire(lab)``: from a connected snapshot lab it returns one
whole revision, ``{"revision": ..., "texts": {pinned URI: text}}`` (a ``bundles.Bundle`` is
accepted too), restarting once from a new manifest when the server says -32002, and refusing
with ``bundles.BundleError`` when that is not enough. The battery ``fixtures/grading/bundles.json``
(written by hand) moves the server's one switch (r2 published, r1 retired or kept) to every
point of the operation: before the manifest, between the manifest and the pinned reads, between
the pinned reads, between the reads and the prompt, after the prompt. Per scenario it says which
revision a correct reader returns, or which check its ``BundleError`` names, and how many
manifest reads must reach the server; the texts of each revision are the fixed ones of
``fixtures/snapshot/expected.json``.

Facts come from the wire, not only from the return value: the number of manifest reads the
server saw during the call (one per attempt, so restarts are counted, a loop that keeps
restarting is seen), whether any ``latest/`` URI was read (never allowed: it mixes revisions),
and whether the server refused a prompt (a reader that takes the prompt must then restart).
A "must refuse" row passes only on a ``BundleError`` naming the expected check; any other
exception is "your code crashed". Labs, budgets and the scorecard are ``course_lib.grading.core``'s.
"""
from __future__ import annotations

import ctypes
import inspect
import threading
from dataclasses import replace
from collections.abc import Mapping
from typing import Any, Awaitable, Callable

import anyio

from course_lib import bundles
from course_lib.bundles import MANIFEST_URI, PINNED_PREFIX, short
from course_lib.display import error_line
from course_lib.errors import CourseError
from course_lib.grading.core import Scenario, Scorecard, Verdict, load_battery, run_battery, select
from course_lib.chapters.snapshot_lab import label, load_oracle

LATEST_PREFIX = PINNED_PREFIX + "latest/"

Acquire = Callable[[Any], Awaitable[Any]]


def _as_bundle(value: Any) -> tuple[str, dict] | None:
    """(revision, texts) from ``{"revision", "texts"}`` or a ``bundles.Bundle``; None for anything else."""
    if isinstance(value, dict):
        revision, texts = value.get("revision"), value.get("texts")
    else:
        revision, texts = getattr(value, "revision", None), getattr(value, "texts", None)
    if isinstance(revision, str) and isinstance(texts, Mapping):
        return revision, dict(texts)
    return None


def describe_bundle(revision: str, texts: dict, oracle: dict) -> tuple[bool, str]:
    """Whether ``texts`` is exactly the fixed ``revision`` bundle, and what was returned in one line."""
    expected = oracle.get(revision)
    if expected is None:
        return False, f"returned a bundle of unknown revision {revision!r}"
    problems = [f"{short(u)} missing" for u in expected if u not in texts]
    problems += [f"{short(u)} is not in {revision}" for u in texts if u not in expected]
    problems += [f"{short(u)} holds the {label(texts[u], oracle)} text" for u in expected
                 if u in texts and texts[u] != expected[u]]
    return not problems, f"returned bundle {revision}" + (f" ({', '.join(problems)})" if problems else "")


async def invoke(function: Callable, *args: Any) -> Any:
    """Call the student's ``function``, written ``async`` or not, so that the budget can stop it.

    A coroutine function runs on the event loop. Any other function runs on a thread of its own:
    a synchronous loop that never ends then cannot freeze the grader, and when the budget
    cancels the call the thread is stopped too (an exception is raised inside it).
    """
    if inspect.iscoroutinefunction(function):
        return await function(*args)
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = function(*args)
        except BaseException as exc:  # handed to the caller below, or the stop asked for
            outcome["error"] = exc

    worker = threading.Thread(target=run, name="student-call", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            await anyio.sleep(0.01)
    except BaseException:  # cancelled by the budget: stop the student's thread as well
        if worker.is_alive():
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(worker.ident), ctypes.py_object(SystemExit))
        raise
    if "error" in outcome:
        raise outcome["error"]
    value = outcome.get("value")
    return await value if inspect.isawaitable(value) else value


def _manifest_reads(n: int) -> str:
    return f"the server saw {n} manifest read{'' if n == 1 else 's'}"


def crashed(exc: BaseException) -> str:
    """What a scorecard says of an exception that is not the refusal the chapter teaches."""
    lines = [ln for ln in error_line(exc).splitlines() if ln.strip()]
    return f"your code crashed: {lines[-1] if lines else type(exc).__name__}"


def judge_refusal(expected_check: str | None, kind: str, observed: str, value: Any) -> tuple[bool, str]:
    """A raised outcome: only ``BundleError`` with the expected check passes, and only where one is expected."""
    if kind == "hung":
        return False, observed
    if isinstance(value, bundles.BundleError):
        said = f"refused: BundleError({value.check}): {value.message}"
        if expected_check is None:
            return False, f"{said}, where a correct reader returns a bundle"
        return value.check == expected_check, said
    return False, crashed(value)


def prompt_refused(sent: list, wire) -> bool:
    """Whether the server answered a ``prompts/get`` among ``sent`` (frames of ``wire``) with -32002."""
    for frame in sent:
        if frame.method == "prompts/get":
            answer = wire.response_to(frame)
            error = ((answer.message if answer else None) or {}).get("error")
            if error and error.get("code") == bundles.UNAVAILABLE:
                return True
    return False


def judge_bundle(s: Scenario, kind: str, observed: str, value: Any, sent: list, *, oracle: dict,
                 latest_hint: str, refused_prompt: bool = False) -> Verdict:
    """The wire facts of the call (latest/ reads, manifest reads), then its outcome."""
    expect = dict(s.expect)
    if refused_prompt and "if_prompt_refused" in expect:
        expect.update(expect.pop("if_prompt_refused"))
    reads = [f.params.get("uri", "") for f in sent if f.method == "resources/read"]
    latest = [short(u) for u in reads if u.startswith(LATEST_PREFIX)]
    manifests = reads.count(MANIFEST_URI)
    facts = []
    if latest:
        facts.append(f"read {', '.join(dict.fromkeys(latest))}")
    if manifests != expect["manifest_reads"] and (manifests or kind == "returned"):  # a crash before any read says enough
        facts.append(_manifest_reads(manifests))

    if kind != "returned":  # raised or hung
        passed, observed = judge_refusal(expect.get("refuses"), kind, observed, value)
    elif (bundle := _as_bundle(value)) is None:
        passed, observed = False, f"returned {type(value).__name__}, not {{'revision': ..., 'texts': ...}}"
    else:
        whole, observed = describe_bundle(*bundle, oracle)
        if "refuses" in expect:
            passed, observed = False, f"{observed} instead of BundleError({expect['refuses']})"
        else:
            passed = whole and bundle[0] == expect["revision"]
    hint = latest_hint if latest else s.hint
    return Verdict(replace(s, hint=hint), passed and not facts, "; ".join(facts + [observed]))


async def prepare_before(lab, before: str | None, oracle: dict) -> None:
    """What happens on the same client before the call: ``"acquire r1"`` reviews r1 with the chapter's reader."""
    if before is None:
        return
    if before == "read latest/requirements":  # the mixed scenario's switch: r2 is published, r1 kept
        await lab.client.read_resource(LATEST_PREFIX + "requirements", cache_mode="bypass")
        return
    if before != "acquire r1":
        raise ValueError(f"unknown preparation {before!r}")
    bundle = await bundles.acquire(lab, oracle=oracle)
    if bundle.revision != "r1":
        raise CourseError(f"the preparation acquired {bundle.revision}, expected r1")


async def grade_bundles(student: Acquire, battery: str = "bundles", *, only: list[str] | None = None,
                        eras: list[str] | None = None, budget: float | None = None) -> Scorecard:
    """Grade ``async def student(lab) -> bundle`` on the battery's snapshot servers.

    ``only`` restricts the battery to some scenario names, ``eras`` to some eras.
    """
    title, scenarios, spec = load_battery(battery)
    scenarios = select(scenarios, only, eras)
    before = {s["name"]: s.get("before") for s in spec["scenarios"]}
    legacy_hints = {s["name"]: s["legacy_hint"] for s in spec["scenarios"] if "legacy_hint" in s}
    budget = budget or spec.get("budget_seconds", 8.0)
    full = load_oracle()
    oracle = {rev: full[rev] for rev in ("r1", "r2")}

    labs: dict[tuple[str, str], Any] = {}

    async def prepare(s: Scenario, lab) -> None:
        labs[s.name, s.era] = lab  # the judge reads the server's answers on this lab's wire
        await prepare_before(lab, before[s.name], oracle)

    def judge(s: Scenario, kind: str, observed: str, value: Any, sent: list) -> Verdict:
        if s.era == "legacy":  # a legacy row never hints at a 2026-07-28 setting
            s = replace(s, hint=legacy_hints.get(s.name, s.hint))
        return judge_bundle(s, kind, observed, value, sent, oracle=oracle, latest_hint=spec["latest_hint"],
                            refused_prompt=prompt_refused(sent, labs[s.name, s.era].wire))

    return await run_battery(title, scenarios, budget, lambda s, lab: invoke(student, lab), prepare=prepare,
                             judge=judge, request_timeout=30)
