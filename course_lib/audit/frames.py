"""Malformed frames: what a server answers to a line no client library would send, and whether it
still serves afterwards.

One session per era (stdio: last on the process of the cursor, URI and tool probes, as a frame may
end it); each frame is followed at once by a ``ping`` (the next ordinary request):

``parse``      a line that is not JSON: JSON-RPC answers ``-32700`` with ``id: null``
``params``     a request with an id whose ``params`` is a string, not an object
``batch``      a JSON array holding one request (MCP has no batches since 2025-06-18)
``no-method``  an object with an id and params but no ``method``
``id-type``    a request whose id is an object (an id is a string or a number)

An error reply is a PASS. Silence on a frame with a usable id (``params``, ``no-method``) is a FAIL
naming the request: a client waiting on that id waits for ever. Silence on a frame without one is
a WARN, if the ``ping`` after it is answered; a server that answers nothing more after a frame, or
exits, FAILs that frame.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass

from course_lib.audit.rawwire import Gone, answers, raw_session, taken_over
from course_lib.audit.session import Context, Work, describe_error

ANSWER = "MUST (JSON-RPC 2.0: a request with an id gets a response)"
SURVIVE = "MUST (course: a malformed frame leaves the server serving)"
ERROR_NULL = "SHOULD (JSON-RPC 2.0: an unreadable request gets an error, id null)"
GRACE = 0.1  # seconds a reply to the frame may come after the ping's (a server that answers concurrently)


def frames(era_line) -> list[tuple[str, bytes, object, bool, str]]:
    """``(name, line, the id a reply to it carries, whether that id must be answered, what it is)``;
    ``era_line(id, method)`` writes a well-formed request of the era."""
    def dumps(message) -> bytes:
        return json.dumps(message).encode()

    return [("parse", b'{"jsonrpc": "2.0", "id": 9001, "method": "ping"', None, False, "a line that is not JSON"),
            ("params", dumps({"jsonrpc": "2.0", "id": 9002, "method": "ping", "params": "course-audit"}), 9002, True,
             'request 9002 (ping) with params "course-audit"'),
            ("batch", dumps([json.loads(era_line(9003, "ping"))]), 9003, False,
             "a batch (an array) holding request 9003 (ping)"),
            ("no-method", dumps({"jsonrpc": "2.0", "id": 9004, "params": {}}), 9004, True,
             "request 9004 without a method"),
            ("id-type", dumps({"jsonrpc": "2.0", "id": {"course-audit": 9005}, "method": "ping"}), None, False,
             'a request whose id is an object ({"course-audit": 9005})')]


def _reply_to(frame_id, got: list) -> object:
    """The reply to the frame among ``got``: one with its id, an array, or an error with id null."""
    for message in got:
        if isinstance(message, list):
            return message
        if isinstance(message, dict) and "method" not in message and not str(message.get("id", "")).startswith("ping"):
            if message.get("id") == frame_id or (message.get("id") is None and "error" in message):
                return message
    return None


def judge(frame_id, must: bool, what: str, reply, survived: bool, gone: str) -> tuple[str, str, str]:
    """``(verdict, rule, detail)`` of one frame."""
    if reply is not None:
        if isinstance(reply, list):
            said = f"an array of {len(reply)} repl{'y' if len(reply) == 1 else 'ies'}"
        elif "error" in reply and isinstance(reply["error"], dict):
            said = f"error {describe_error(reply['error'])} (id {json.dumps(reply.get('id'))})"
        else:
            said = f"a result (id {json.dumps(reply.get('id'))})"
        if survived:
            return "PASS", ANSWER, f"{what}: {said}"
    if not survived:
        return "FAIL", SURVIVE, f"{what}: {'answered, but ' if reply is not None else ''}{gone}"
    if must:
        return "FAIL", ANSWER, f"{what}: no reply at all (a client waiting on id {frame_id} waits for ever); " \
                               "the next request was answered"
    return "WARN", ERROR_NULL, f"{what}: no reply; the next request was answered"


async def run(ctx: Context, era: str, report) -> None:
    """The frame probe on a process of its own."""
    try:
        async with raw_session(ctx, era) as conn:
            await _probe(ctx, era, conn, report)
    except Gone as exc:
        report.add("frame.malformed", "FAIL", SURVIVE, era, f"not probed: {exc}", "session")


def work(ctx: Context, era: str, report) -> Work:
    """The frame probe on the process of the probes before it (stdio), read raw from then on: last, as
    a frame may end the process; its lines go to ``report``."""
    async def body(wire, _) -> None:
        await _probe(ctx, era, taken_over(wire, era, ctx.request_timeout), report)

    # each frame waits at most one request budget for its ping, and a grace for its own reply
    return Work("frames", body, budget=ctx.budget + len(frames(lambda *_: b"{}")) * (ctx.request_timeout + GRACE))


async def _probe(ctx: Context, era: str, conn, report) -> None:
    """Each frame, then its ``ping``; a frame still unanswered when its ping is keeps listening for
    ``GRACE`` s while the next frame and its ping go out (the graces overlap). A message read in that
    time is the reply of the frame it names by id; one that names none (an array, an error with id
    null) is the reply of the latest frame still waiting for one (a server that reads in order
    answers a frame before the ping sent after it), else of the one before it, still in its grace."""
    waiting: list[_Frame] = []  # the frames sent, in order
    for n, (name, line, frame_id, must, what) in enumerate(frames(conn.request_line)):
        frame = _Frame(name, frame_id, must, what)
        waiting.append(frame)
        ping_id = f"ping-{n}"
        try:
            await conn.send(line)
            await conn.send(conn.request_line(ping_id, "ping"))
            await conn.read_until(_sorting(waiting, answers(ping_id)), ctx.request_timeout)
            frame.survived = frame.pinged
            frame.gone = conn.silence(ctx.request_timeout)
        except Gone as exc:
            frame.survived, frame.gone = False, str(exc)
        frame.until = time.monotonic() + GRACE
        if not frame.survived:
            break
    left = max((f.until for f in waiting if f.reply is None and f.survived), default=0.0) - time.monotonic()
    if left > 0:
        await conn.read_until(_sorting(waiting, lambda m: False), left)
    for frame in waiting:
        verdict, rule, detail = judge(frame.frame_id, frame.must, frame.what, frame.reply, frame.survived, frame.gone)
        report.add("frame.malformed", verdict, rule, era, detail, frame.name)


@dataclass
class _Frame:
    name: str
    frame_id: object
    must: bool
    what: str
    reply: object = None
    pinged: bool = False  # the ping sent after it was answered
    survived: bool = False
    gone: str = ""
    until: float = float("inf")  # when its grace ends (once its ping is answered)


def _sorting(sent: list[_Frame], done):
    """A ``read_until`` predicate that gives each message, as it comes, to the frame it answers."""
    def sort(message) -> bool:
        now = time.monotonic()
        if done(message):
            sent[-1].pinged = True
            return True
        listening = [f for f in sent if f.reply is None and now <= f.until and _reply_to(f.frame_id, [message])]
        named = [f for f in listening if isinstance(message, dict) and f.frame_id is not None
                 and message.get("id") == f.frame_id]
        if named or listening:
            (named or listening)[-1].reply = message
        return False
    return sort
