"""The judges of a bundle reader (chapter 05's exercise and the capstone's ``bundle()``).

Pure functions of the expectation and the ``Outcome``: facts come from the wire too (the manifest
reads the server saw, any ``latest/`` read, the returned revision's prompt served, not refused)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from course_lib import bundles
from course_lib.bundles import MANIFEST_URI, PINNED_PREFIX, short
from course_lib.chapters.snapshot_lab import label, load_oracle
from course_lib.errors import CourseError
from course_lib.grading import outcome as o
from course_lib.grading.battery import Scenario, hint_in_era
from course_lib.grading.runner import Exercise, labs, student_row
from course_lib.grading.scorecard import Verdict

LATEST_PREFIX = PINNED_PREFIX + "latest/"


def as_bundle(value: Any) -> tuple[str, dict] | None:
    """(revision, texts) from ``{"revision", "texts"}`` or a ``bundles.Bundle``; None for anything else."""
    get = value.get if isinstance(value, dict) else lambda name: getattr(value, name, None)
    revision, texts = get("revision"), get("texts")
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


def prompts(outcome: o.Outcome) -> list[tuple[str | None, bool]]:
    """Every prompt the call asked for: (revision, served), in order."""
    wire = outcome.state.get("wire")
    out = []
    for frame in outcome.sent:
        if frame.method == "prompts/get":
            answer = wire.response_to(frame) if wire is not None else None
            message = (answer.message if answer else None) or {}
            out.append(((frame.params.get("arguments") or {}).get("revision"), "result" in message))
    return out


def judge_refusal(expected_check: str | None, outcome: o.Outcome) -> tuple[bool, str, str | None]:
    """Only ``BundleError`` with the expected check passes, and only where one is expected."""
    error = outcome.error
    if isinstance(error, bundles.BundleError):  # (a typed error: only ever in a REFUSED outcome)
        said = f"refused: BundleError({error.check}): {error.message}"
        if expected_check is None:
            return False, f"{said}, where a correct reader returns a bundle", o.WRONG_REFUSAL
        return error.check == expected_check, said, None if error.check == expected_check else o.WRONG_REFUSAL
    if outcome.kind == o.REFUSED:  # a typed error, but not the bundle's refusal: a crash of the reader
        return False, o.describe(o.crashed(error)), o.CRASH
    return False, o.describe(outcome), o.failure_of(outcome)


def judge_bundle(s: Scenario, outcome: o.Outcome, *, oracle: dict, latest_hint: str) -> Verdict:
    """The wire facts of the call (latest/ reads, manifest reads, the prompt), then its outcome."""
    expect = s.expect
    reads = [f.params.get("uri", "") for f in outcome.sent if f.method == "resources/read"]
    latest = [u for u in reads if u.startswith(LATEST_PREFIX)]
    manifests = reads.count(MANIFEST_URI)
    facts = []
    if latest:
        facts.append(f"read {', '.join(dict.fromkeys(map(short, latest)))}")
    if manifests != expect["manifest_reads"] and (manifests or outcome.kind == o.RETURNED):
        facts.append(f"the server saw {manifests} manifest read{'' if manifests == 1 else 's'}")

    if outcome.kind != o.RETURNED:
        passed, observed, failure = judge_refusal(expect.get("refuses"), outcome)
    elif (bundle := as_bundle(outcome.value)) is None:
        passed, observed, failure = (False, f"returned {type(outcome.value).__name__}, not "
                                     "{'revision': ..., 'texts': ...}", o.WRONG_RESULT)
    else:
        whole, observed = describe_bundle(*bundle, oracle)
        served = [rev for rev, ok in prompts(outcome) if ok]
        if "refuses" in expect:
            passed, failure = False, o.MISSING_REFUSAL
            observed = f"{observed} instead of BundleError({expect['refuses']})"
        else:
            passed, failure = whole and bundle[0] == expect["revision"], o.WRONG_RESULT
            if passed and bundle[0] not in served:
                facts.append(f"never got the {bundle[0]} prompt served" if prompts(outcome)
                             else "asked for no prompt")
    hint = latest_hint if latest else s.hint  # (which names the first latest/ URI read: ``{value}``)
    named = outcome.with_wire(outcome.sent, value=repr(latest[0])) if latest else outcome
    ok = passed and not facts
    return Verdict(replace(s, hint=hint), ok, "; ".join(facts + [observed]), None if ok else failure, named)


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


def revisions() -> dict:
    """The fixed texts of r1 and r2 (``fixtures/snapshot/expected.json``)."""
    full = load_oracle()
    return {rev: full[rev] for rev in ("r1", "r2")}


def bundle_rows(ex: Exercise, call) -> tuple:
    """``runner.run``'s labs and row of a bundle: a snapshot lab prepared as the row's ``before`` says
    (outside the budget), ``call(s, lab)`` judged by ``judge_bundle`` with the row's hint in its era."""
    oracle = revisions()

    def judge(s: Scenario, outcome: o.Outcome) -> Verdict:
        hint = hint_in_era(s, ex.rows[s.name])
        return judge_bundle(replace(s, hint=hint), outcome, oracle=oracle, latest_hint=ex.spec["latest_hint"])

    return (labs(ex, lambda s, lab: prepare_before(lab, ex.rows[s.name].get("before"), oracle), request_timeout=30),
            student_row(ex, call, judge))
