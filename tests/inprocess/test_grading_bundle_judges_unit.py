"""The bundle reader's judges (chapter 05, the capstone's ``bundle()``) on recorded wires, in-process:
the requests and answers are real ``wire.Wire`` frames, the rows those of ``fixtures/grading/bundles.json``,
the texts of r1 and r2 the fixed oracle (``fixtures/snapshot/expected.json``)."""
import json

import pytest
from mcp import MCPError

from course_lib import bundles
from course_lib.errors import CheckFailed
from course_lib.grading import outcome as o
from course_lib.grading.battery import load_battery
from course_lib.grading.bundle_judge import as_bundle, judge_bundle, prompts, revisions
from course_lib.wire import Wire

ORACLE = revisions()
MANIFEST = bundles.MANIFEST_URI
ROWS = {s.name: s for s in load_battery("bundles")[1] if s.era == "legacy"}
LATEST_HINT = "latest/ mixes revisions"
ONE_READ, RESTARTED, REFUSES = ("mixed: read before the edit", "expired: r1 dropped after its manifest",
                                "recovery also unavailable")


class Recording:
    """A wire as the lab's tap records it: each request, then the server's answer (or none)."""

    def __init__(self):
        self.wire = Wire()

    def ask(self, method, params, answer=None):
        n = len(self.wire) + 1
        self.wire.record("→", json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params}))
        if answer is not None:
            self.wire.record("←", json.dumps({"jsonrpc": "2.0", "id": n, **answer}))
        return self

    def read(self, uri, times=1):
        for _ in range(times):
            self.ask("resources/read", {"uri": uri}, {"result": {"contents": []}})
        return self

    def prompt(self, revision, served=True, answered=True, arguments=True):
        answer = {"result": {"messages": []}} if served else {"error": {"code": bundles.UNAVAILABLE, "message": "x"}}
        params = {"name": bundles.PROMPT, **({"arguments": {"revision": revision}} if arguments else {})}
        return self.ask("prompts/get", params, answer if answered else None)

    def bundle(self, revision, manifests=1, prompted=True):
        self.read(MANIFEST, manifests)
        for uri in ORACLE[revision]:
            self.read(uri)
        return self.prompt(revision) if prompted else self


def judged(name, outcome, recording):
    recorded = outcome.with_wire(recording.wire.requests(), wire=recording.wire)
    return judge_bundle(ROWS[name], recorded, oracle=ORACLE, latest_hint=LATEST_HINT)


def bundle(revision, texts=None):
    return {"revision": revision, "texts": dict(ORACLE[revision]) if texts is None else texts}


def test_a_whole_bundle_of_the_rows_revision_after_its_manifest_reads_and_served_prompt_passes():
    for name, revision, manifests in [(ONE_READ, "r1", 1), (RESTARTED, "r2", 2),
                                      ("before the manifest: r2 published", "r2", 1)]:
        v = judged(name, o.returned(bundle(revision)), Recording().bundle(revision, manifests))
        assert (v.passed, v.failure_class, v.observed) == (True, None, f"returned bundle {revision}")
    # a Bundle of the library's own class is read the same way
    made = bundles.Bundle("r1", dict(ORACLE["r1"]), "review")
    assert judged(ONE_READ, o.returned(made), Recording().bundle("r1")).passed


@pytest.mark.parametrize("value, shown", [
    (dict(ORACLE["r1"]), "dict"), ({"revision": 1, "texts": dict(ORACLE["r1"])}, "dict"),
    ({"revision": "r1", "texts": list(ORACLE["r1"])}, "dict"), ({"revision": "r1", "texts": None}, "dict"),
    ({"texts": dict(ORACLE["r1"])}, "dict"), ("r1", "str"), (None, "NoneType"),
])
def test_anything_but_a_revision_name_and_a_texts_mapping_is_not_a_bundle(value, shown):
    assert as_bundle(value) is None
    v = judged(ONE_READ, o.returned(value), Recording().bundle("r1"))
    assert (v.passed, v.failure_class) == (False, o.WRONG_RESULT)
    assert v.observed == f"returned {shown}, not {{'revision': ..., 'texts': ...}}"


R1 = list(ORACLE["r1"])


@pytest.mark.parametrize("value, observed", [
    (bundle("r2"), "returned bundle r2"),  # a whole bundle of the other revision
    (bundle("r3", dict(ORACLE["r1"])), "returned a bundle of unknown revision 'r3'"),
    (bundle("r1", {u: ORACLE["r1"][u] for u in R1[1:]}), f"returned bundle r1 ({bundles.short(R1[0])} missing)"),
    (bundle("r1", {}), "returned bundle r1 (" + ", ".join(f"{bundles.short(u)} missing" for u in R1) + ")"),
    (bundle("r1", {**ORACLE["r1"], **ORACLE["r2"]}),
     "returned bundle r1 (" + ", ".join(f"{bundles.short(u)} is not in r1" for u in ORACLE["r2"]) + ")"),
    (bundle("r1", dict(zip(R1, ORACLE["r2"].values()))),
     "returned bundle r1 (" + ", ".join(f"{bundles.short(u)} holds the r2 text" for u in R1) + ")"),
    (bundle("r1", {**ORACLE["r1"], R1[0]: "edited"}), f"returned bundle r1 ({bundles.short(R1[0])} holds the ? text)"),
])
def test_a_bundle_not_exactly_the_rows_revision_is_a_wrong_result_and_says_what_is_wrong(value, observed):
    v = judged(ONE_READ, o.returned(value), Recording().bundle("r1"))  # its prompt asked, no other fact
    assert (v.passed, v.failure_class, v.observed) == (False, o.WRONG_RESULT, observed)


@pytest.mark.parametrize("recording, fact", [
    (Recording().bundle("r1", prompted=False), "asked for no prompt"),
    (Recording().bundle("r1", prompted=False).prompt("r1", served=False), "never got the r1 prompt served"),
    (Recording().bundle("r1", prompted=False).prompt("r1", answered=False), "never got the r1 prompt served"),
    (Recording().bundle("r1", prompted=False).prompt("r2"), "never got the r1 prompt served"),
    (Recording().bundle("r1", prompted=False).prompt("r1", arguments=False), "never got the r1 prompt served"),
    (Recording().bundle("r1", manifests=2), "the server saw 2 manifest reads"),
    (Recording().bundle("r1", manifests=0), "the server saw 0 manifest reads"),
    (Recording().bundle("r1").read(bundles.PINNED_PREFIX + "latest/design"), "read latest/design"),
])
def test_each_wire_fact_fails_a_right_bundle(recording, fact):
    v = judged(ONE_READ, o.returned(bundle("r1")), recording)
    assert (v.passed, v.failure_class, v.observed) == (False, o.WRONG_RESULT, f"{fact}; returned bundle r1")
    assert v.hint == (LATEST_HINT if "latest" in fact else ROWS[ONE_READ].hint)


def test_the_prompt_is_asked_of_no_other_bundle_and_the_facts_come_first():
    v = judged(ONE_READ, o.returned(bundle("r2")), Recording().bundle("r2", prompted=False).read(MANIFEST))
    assert v.observed == "the server saw 2 manifest reads; returned bundle r2", "no prompt fact for a wrong bundle"
    assert prompts(o.returned(None).with_wire(Recording().prompt("r1").wire.requests())) == [("r1", False)], \
        "without the wire's answers no prompt counts as served"
    latest = Recording().read(bundles.PINNED_PREFIX + "latest/design", 2).read(bundles.PINNED_PREFIX + "latest/x")
    v = judged(ONE_READ, o.returned(bundle("r1")), latest.bundle("r1"))
    assert v.observed.startswith("read latest/design, latest/x; ")


@pytest.mark.parametrize("outcome, failure, observed", [
    (o.raised(bundles.BundleError("recovery", "r2 too")), None, "refused: BundleError(recovery): r2 too"),
    (o.raised(bundles.BundleError("manifest_membership", "x")), o.WRONG_REFUSAL,
     "refused: BundleError(manifest_membership): x"),
    (o.raised(bundles.BundleError("pinned_read", "x")), o.WRONG_REFUSAL, "refused: BundleError(pinned_read): x"),
    # the server's own error passed on, a typed error of another kind, the student's own exception
    (o.raised(MCPError(bundles.UNAVAILABLE, "Snapshot unavailable")), o.CRASH,
     "your code crashed: MCPError -31001: Snapshot unavailable"),
    (o.raised(bundles.SnapshotUnavailable("r2", "manifest", "gone")), o.CRASH,
     "your code crashed: SnapshotUnavailable"),
    (o.raised(CheckFailed("recovery", "not the bundle's error")), o.CRASH, "your code crashed: CheckFailed"),
    (o.raised(ValueError("r2 is gone")), o.CRASH, "your code crashed: ValueError: r2 is gone"),
    (o.hung(20), o.HANG, "no result within 20 s (stopped)"),
    (o.returned(bundle("r2")), o.MISSING_REFUSAL, "returned bundle r2 instead of BundleError(recovery)"),
    (o.returned(bundle("r1", {})), o.MISSING_REFUSAL, "returned bundle r1 ("),
])
def test_where_a_refusal_is_due_only_the_bundle_error_of_that_check_passes(outcome, failure, observed):
    v = judged(REFUSES, outcome, Recording().read(MANIFEST, 2))
    assert (v.passed, v.failure_class) == (failure is None, failure), v.observed
    assert v.observed.startswith(observed), v.observed


@pytest.mark.parametrize("outcome", [o.raised(ValueError("x")), o.hung(20),
                                     o.raised(bundles.BundleError("recovery", "x"))])
def test_manifest_reads_count_for_an_outcome_that_is_not_a_bundle_only_once_one_reached_the_server(outcome):
    quiet = judged(REFUSES, outcome, Recording())  # stopped before any read: no fact
    assert "manifest" not in quiet.observed
    once = judged(REFUSES, outcome, Recording().read(MANIFEST))  # one attempt where a restart is due
    assert once.observed.startswith("the server saw 1 manifest read; ") and not once.passed


def test_a_bundle_error_where_a_bundle_is_due_is_a_wrong_refusal():
    v = judged(ONE_READ, o.raised(bundles.BundleError("recovery", "x")), Recording().read(MANIFEST))
    assert (v.passed, v.failure_class) == (False, o.WRONG_REFUSAL)
    assert v.observed == "refused: BundleError(recovery): x, where a correct reader returns a bundle"


def test_the_latest_hint_names_the_first_latest_uri_read():
    """``{value}`` in the battery's latest/ hint is the first latest/ URI the reader read."""
    uri = bundles.PINNED_PREFIX + "latest/design"
    recording = Recording().bundle("r1").read(uri).read(bundles.PINNED_PREFIX + "latest/x")
    recorded = o.returned(bundle("r1")).with_wire(recording.wire.requests(), wire=recording.wire)
    v = judge_bundle(ROWS[ONE_READ], recorded, oracle=ORACLE, latest_hint="the latest/ read {value} mixes revisions")
    assert v.hint == f"the latest/ read {uri!r} mixes revisions"
