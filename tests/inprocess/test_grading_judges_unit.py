"""The judges on recorded outcomes, in-process (no server): each rule fails each kind of wrong answer.

Expected values are written by hand from the batteries; the texts of r1 and r2 are the fixed oracle
(``fixtures/snapshot/expected.json``)."""
import pytest
from mcp import MCPError

from course_lib import bundles
from course_lib.errors import CatalogError, CheckFailed
from course_lib.grading import outcome as o
from course_lib.grading.battery import Scenario, load_battery
from course_lib.grading.bundle_judge import judge_bundle, revisions

ORACLE = revisions()
MANIFEST = bundles.MANIFEST_URI


class Sent:
    """One recorded request, and the answer the server gave it."""

    def __init__(self, method, params, answer):
        self.method, self.params, self.answer = method, params, answer


class Recorded:
    def response_to(self, frame):
        return type("Answer", (), {"message": frame.answer})()


def read(uri):
    return Sent("resources/read", {"uri": uri}, {"result": {}})


def prompt(revision, served=True):
    return Sent("prompts/get", {"name": bundles.PROMPT, "arguments": {"revision": revision}},
                {"result": {}} if served else {"error": {"code": bundles.UNAVAILABLE}})


def whole(revision, prompted=True, served=True, manifests=1):
    sent = [read(MANIFEST)] * manifests + [read(u) for u in ORACLE[revision]]
    return sent + ([prompt(revision, served)] if prompted else [])


def bundle_scenario(name):
    _, scenarios, spec = load_battery("bundles")
    return next(s for s in scenarios if s.name == name and s.era == "legacy"), spec


def judged(name, outcome, sent):
    s, spec = bundle_scenario(name)
    return judge_bundle(s, outcome.with_wire(sent, wire=Recorded()), oracle=ORACLE, latest_hint=spec["latest_hint"])


MIXED = "mixed: read before the edit"       # r1, one manifest read
EXPIRED = "expired: r1 dropped after its manifest"  # r2 after one restart
RECOVERY = "recovery also unavailable"      # BundleError(recovery) after one restart


def test_a_complete_bundle_of_its_revision_with_its_prompt_passes():
    assert judged(MIXED, o.returned({"revision": "r1", "texts": dict(ORACLE["r1"])}), whole("r1")).passed
    assert judged(EXPIRED, o.returned({"revision": "r2", "texts": dict(ORACLE["r2"])}),
                  whole("r2", manifests=2)).passed


@pytest.mark.parametrize("value, sent, observed", [
    # the revision of a complete bundle: the whole r2 where r1 is expected, or r1 where r2 is
    ({"revision": "r2", "texts": dict(ORACLE["r2"])}, whole("r2"), "returned bundle r2"),
    # a bundle of an unknown revision, a texts map that is short, long, or holds the other revision's text
    ({"revision": "r9", "texts": dict(ORACLE["r1"])}, whole("r1"), "returned a bundle of unknown revision 'r9'"),
    ({"revision": "r1", "texts": dict(list(ORACLE["r1"].items())[:1])}, whole("r1"), "returned bundle r1 ("),
    ({"revision": "r1", "texts": {**ORACLE["r1"], **ORACLE["r2"]}}, whole("r1"), "returned bundle r1 ("),
    ({"revision": "r1", "texts": dict(zip(ORACLE["r1"], ORACLE["r2"].values()))}, whole("r1"),
     "returned bundle r1 ("),
    # no prompt, the prompt refused, the prompt of another revision
    ({"revision": "r1", "texts": dict(ORACLE["r1"])}, whole("r1", prompted=False), "asked for no prompt"),
    ({"revision": "r1", "texts": dict(ORACLE["r1"])}, whole("r1", served=False), "never got the r1 prompt served"),
    ({"revision": "r1", "texts": dict(ORACLE["r1"])}, whole("r1", prompted=False) + [prompt("r2")],
     "never got the r1 prompt served"),
    # a restart where none was due, a latest/ read
    ({"revision": "r1", "texts": dict(ORACLE["r1"])}, whole("r1", manifests=2), "the server saw 2 manifest reads"),
    ({"revision": "r1", "texts": dict(ORACLE["r1"])}, whole("r1") + [read(bundles.PINNED_PREFIX + "latest/design")],
     "read latest/design"),
    # not a bundle at all
    (dict(ORACLE["r1"]), whole("r1"), "returned dict, not {'revision': ..., 'texts': ...}"),
])
def test_every_wrong_return_fails(value, sent, observed):
    verdict = judged(MIXED, o.returned(value), sent)
    assert not verdict.passed
    assert observed in verdict.observed, verdict.observed


@pytest.mark.parametrize("outcome, failure, observed", [
    (o.raised(bundles.BundleError("recovery", "r2 too")), None, "refused: BundleError(recovery)"),
    (o.raised(bundles.BundleError("manifest_membership", "other documents")), o.WRONG_REFUSAL,
     "refused: BundleError(manifest_membership)"),
    # the server's own error passed on, the student's own exception, a typed error of another kind
    (o.raised(MCPError(bundles.UNAVAILABLE, "Snapshot unavailable")), o.CRASH, "your code crashed: MCPError -31001"),
    (o.raised(ValueError("r2 is gone")), o.CRASH, "your code crashed: ValueError: r2 is gone"),
    (o.raised(CheckFailed("recovery", "not the bundle's error")), o.CRASH, "your code crashed"),
    (o.hung(3), o.HANG, "no result within 3 s (stopped)"),
    (o.returned({"revision": "r2", "texts": dict(ORACLE["r2"])}), o.MISSING_REFUSAL,
     "instead of BundleError(recovery)"),
])
def test_a_refusal_is_only_the_bundle_error_of_the_expected_check(outcome, failure, observed):
    verdict = judged(RECOVERY, outcome, [read(MANIFEST)] * 2)
    assert verdict.passed is (failure is None), verdict.observed
    assert verdict.failure_class == failure
    assert observed in verdict.observed


def test_a_bundle_error_where_a_bundle_is_due_is_a_wrong_refusal():
    verdict = judged(MIXED, o.raised(bundles.BundleError("recovery", "x")), [read(MANIFEST)])
    assert (verdict.passed, verdict.failure_class) == (False, o.WRONG_REFUSAL)


def test_the_walkers_refusal_is_typed_never_read_from_words():
    from course_lib.grading.core import judge_names

    expect = {"raises": True, "refusal": {"type": "CatalogError", "reason": "cursor_repeated"}}
    own = o.raised(RuntimeError("raised CatalogError(cursor_repeated)"))  # the words of a refusal, not one
    assert judge_names(expect, own)[2] == o.CRASH
    assert judge_names(expect, o.raised(CatalogError("cursor_repeated", "x")))[0]
    assert judge_names(expect, o.raised(CatalogError("duplicate_name", "x")))[2] == o.WRONG_REFUSAL


@pytest.mark.anyio
async def test_every_card_a_grader_hands_out_reaches_the_hooks_with_its_chapter_and_score():
    from course_lib.grading.allowlist import grade_read_handler
    from course_lib.grading.scorecard import HOOKS

    seen = []
    HOOKS.append(lambda card: seen.append((card.chapter, card.battery, card.score, len(card.verdicts))))
    try:
        _, scenarios, _ = load_battery("read_handler")
        rows = list(dict.fromkeys(s.name for s in scenarios))[:3]
        card = await grade_read_handler(len, only=rows, eras=["legacy"])  # no source: no server starts
    finally:
        HOOKS.pop()
    assert seen == [("04_resources_and_uris", "read_handler", card.score, 3)]
