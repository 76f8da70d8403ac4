"""The judges of served exercises, run on a recorded row (``transcripts.decode``) in process.

A served row is recorded as the requests it sent and its lab's wire (``grading.served.answered``): the
replies the judge read (a strict audit session's row: its own requests and replies; an audit's row:
the audit's lines and the crash the harness logged; a paging row: also the lines of the lab that lent it a
cursor). Each function here reads those reply frames as the row's ``ask_row`` reads
them from the client session (the student's crash carried as -32603, a reply error as ``MCPError``,
a result as the SDK's model) and hands them to the exercise's own judge; a row that passed says what
``ask_row`` says (``snapshot_server.observed_when_passed``). ``make record`` checks each row judged here
against the real run, and the exercise module is in the recording's fingerprint (``depends``)."""
from __future__ import annotations

from mcp import MCPError
from mcp.types import ListPromptsResult, ListToolsResult, ReadResourceResult

from course_lib.grading import outcome as o
from course_lib.grading.battery import read_spec, rows_of
from course_lib.grading.runner import verdict_of
from course_lib.grading.scorecard import Verdict
from course_lib.grading.served import Asker, crash_of, judged
from course_lib.wire import Wire


def replies(s, outcome: o.Outcome, method: str) -> list[dict]:
    """The reply frames to the row's ``method`` requests, in order."""
    wire = outcome.state["wire"]
    found = [wire.response_to(f) for f in outcome.sent if f.method == method]
    if not found or any(r is None for r in found):
        raise ValueError(f"{s.name}: the recording holds no reply to one of its {method} requests")
    return [r.message for r in found]


def answer_in_reply(reply: dict, model):
    """What the client session hands the row: the model of its result, or the ``MCPError`` of its
    error (the student's crash, or their call stopped, raises their ``Failed`` as the lab's ``Asker``)."""
    if "error" not in reply:
        return model.model_validate(reply["result"])
    error = reply["error"]
    failed = crash_of(error)
    if failed is not None:
        raise failed
    return MCPError(error["code"], error["message"], error.get("data"))


def verdict(s, judge) -> object:
    try:
        return verdict_of(s, o.judged(None, judge()))
    except o.Failed as failed:
        return verdict_of(s, failed.outcome)


def judge_tool_result(s, outcome: o.Outcome):
    """Chapter 3's judge on a row's recording: the reply frame to its ``tools/call``."""
    from course_lib.grading.tool_result import BATTERY, judge

    row = rows_of(read_spec(BATTERY))[s.name]
    reply = replies(s, outcome, "tools/call")[-1]
    return verdict(s, lambda: judge(row["expect"]["answer"], reply, row["result"]))


def judge_snapshot_server(s, outcome: o.Outcome):
    """Chapter 5's server judge on a row's recording: each ``resources/read`` reply, in order, as
    ``snapshot_server.ask_row`` judges it (its first failing read is the row's)."""
    from course_lib.chapters.snapshot_lab import load_oracle
    from course_lib.grading.snapshot_server import BATTERY, judge_read, observed_when_passed

    row, oracle = rows_of(read_spec(BATTERY))[s.name], load_oracle()

    def judge() -> str:
        found = replies(s, outcome, "resources/read")
        if len(found) > len(row["reads"]):
            raise ValueError(f"{s.name}: more reads recorded than the row asks")
        for uri, reply in zip(row["reads"], found):
            judge_read(row["expect"], uri, answer_in_reply(reply, ReadResourceResult), oracle, s.era)
        if len(found) < len(row["reads"]):
            raise ValueError(f"{s.name}: {len(found)} of the row's {len(row['reads'])} reads recorded")
        return observed_when_passed(row)

    return verdict(s, judge)


def judge_checked_tools(s, outcome: o.Outcome):
    """Chapter 8's handler judge on a row's recording: each ``tools/call`` reply of its strict session,
    in order (its first wrong answer is the row's); the audit's row, on the audit's lines and the crash
    the harness logged."""
    from course_lib.audit.report import Line
    from course_lib.grading.checked_tools import BATTERY, judge_audit, judge_call, observed_when_passed

    row = rows_of(read_spec(BATTERY))[s.name]
    if row["answer"] == "audit":
        return verdict_of(s, judge_audit([Line(**x) for x in outcome.state["audit"]], outcome.state["crash"]))

    def judge() -> str:
        found = replies(s, outcome, "tools/call")
        if len(found) > len(row["calls"]):
            raise ValueError(f"{s.name}: more calls recorded than the row makes")
        for call, reply in zip(row["calls"], found):
            judge_call(row["answer"], call, reply)
        if len(found) < len(row["calls"]):
            raise ValueError(f"{s.name}: {len(found)} of the row's {len(row['calls'])} calls recorded")
        return observed_when_passed(row)

    return verdict(s, judge)


def judge_read_handler(s, outcome: o.Outcome):
    """Chapter 4's read-handler judge on a row's recording: each request of its strict session with its
    reply, in order, and for an audit's row the audit's lines on them (``allowlist.judge_row``)."""
    from course_lib.audit.report import Line
    from course_lib.grading.allowlist import BATTERY, judge_row, load_library

    spec = read_spec(BATTERY)
    found = [(f.params.get("uri"), outcome.state["wire"].response_to(f)) for f in outcome.sent]
    if any(reply is None for _, reply in found):
        raise ValueError(f"{s.name}: the recording holds no reply to one of its requests")
    asked = [(uri, reply.message) for uri, reply in found]
    lines = [Line(**x) for x in outcome.state["audit"]]
    return verdict(s, lambda: judge_row(rows_of(spec)[s.name], asked, lines, s.era, load_library(spec)))


def judge_envelope(s, outcome: o.Outcome):
    """Chapter 8's envelope judge on a row's recorded replays (``envelope_checker.recorded``), in the eras and
    interpreters recorded (``unwritten``: the checker could not be copied, no replay ran)."""
    from course_lib.grading import envelope_checker as e

    spec = read_spec(e.BATTERY)
    if "unwritten" in outcome.state:
        return e.unwritten(s, outcome.state["unwritten"], spec)
    replays = {(r["era"], r["mode"]): (e.outcome_of(r), r["replies_checked"]) for r in outcome.state["replays"]}
    eras, modes = (list(dict.fromkeys(key[i] for key in replays)) for i in (0, 1))
    return e.judge_envelope(s, replays, rows_of(spec)[s.name]["refused_at"], eras, modes, spec["class_hints"])


class Recorded:
    """A lab whose requests are answered from a recording, for ``paging_server.Pages`` and the walker (its
    ``session`` and ``wire``): each request must be the next one recorded (method and cursor), and its reply
    is the recorded frame, read as the client session reads it (a reply error raises ``MCPError``)."""

    def __init__(self, name: str, sent, recorded: Wire):
        self.name, self.sent, self.recorded, self.wire, self.session = name, list(sent), recorded, Wire(), self

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc) -> bool:
        return False

    async def list_tools(self, params=None):
        return self.answer("tools/list", params, ListToolsResult)

    async def list_prompts(self, params=None):
        return self.answer("prompts/list", params, ListPromptsResult)

    def answer(self, method: str, params, model):
        cursor = None if params is None else params.cursor
        frame = self.sent.pop(0) if self.sent else None
        reply = None if frame is None else self.recorded.response_to(frame)
        if reply is None or (frame.method, frame.params.get("cursor")) != (method, cursor):
            raise ValueError(f"{self.name}: {method} with cursor {cursor!r} is not the next request recorded "
                             f"with its reply ({'none' if frame is None else frame.raw})")
        self.wire.record("→", frame.raw)
        self.wire.record("←", reply.raw)
        if "error" in reply.message:
            error = reply.message["error"]
            raise MCPError(error["code"], error["message"], error.get("data"))
        return model.model_validate(reply.message["result"], by_name=False)


def settled(coroutine):
    """What a coroutine that never waits returns (each of its requests answered from a recording)."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise RuntimeError("the replay waited for something its recording does not hold")


def judge_paging_server(s, outcome: o.Outcome):
    """Chapter 6's judge on a row's recording: ``paging_server.ask_row`` itself, its requests answered by the
    row's replies, and a borrowed cursor read from the recorded lines of its lender's lab (``lent``) by
    ``paging_server.lent_cursor`` (so the lender's failure is the row's, as in the real run)."""
    from course_lib.grading import paging_server as p

    if outcome.kind == o.CRASHED:  # the function could not be copied to a server (``served.written``)
        return Verdict(s, False, o.describe(outcome), o.CRASH, outcome)
    spec = read_spec(p.BATTERY)
    paging, row, budget, lent = spec["paging"], rows_of(spec)[s.name], spec["budget_seconds"], {"A": None, "B": None}
    for lender, lines in (outcome.state["lent"] or {}).items():
        if not lines:
            raise ValueError(f"{s.name}: the lab of server {lender} did not run when this row was recorded")
        wire = Wire()
        for direction, raw in lines:
            wire.record(direction, raw)
        asked = [f for f in wire.requests() if f.method != "initialize"]
        lent[lender] = settled(p.lent_cursor(Recorded(f"{s.name}, lender {lender}", asked, wire), paging, budget, []))
    replayed = Recorded(s.name, outcome.sent, outcome.state["wire"])
    found = settled(judged(p.ask_row(p.Pages(Asker(replayed, budget), p.allowed_on(paging, row)), row, lent)))
    if replayed.sent:
        raise ValueError(f"{s.name}: {len(replayed.sent)} recorded request(s) left unasked by the row")
    return verdict_of(s, found)
