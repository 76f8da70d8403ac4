"""Helpers of the stateless-era chapters (2026-07-28), used by ``09_stateless_cache``: listings
through the Client's response cache, cache keys a student can read, request-state tampering, a
hand-driven input loop, and the production checklist with the chapter that shows each item.
"""
from __future__ import annotations

import base64
import json
import re
from typing import Any, Awaitable, Callable

import mcp_types as types

from course_lib.display import Table
from course_lib.errors import CourseError
from course_lib.walker import CursorRules

MAX_PAGES = 16


async def client_listing(client, *, first_page: str = "use", max_pages: int = MAX_PAGES) -> list[str]:
    """All tool names, page by page, through ``Client.list_tools`` (so its response cache is in play).

    ``first_page`` is the ``cache_mode`` of the cursorless request ("use", "refresh", "bypass");
    continuation pages are never cached by the SDK. Bounded by the walker's ``CursorRules``.
    """
    rules = CursorRules("tools", max_pages=max_pages)
    while True:
        params = rules.request_params()
        cursor = None if params is None else params.cursor
        page = await client.list_tools(cursor=cursor, cache_mode=first_page if cursor is None else "use")
        if rules.accept(page.tools, page.next_cursor) is None:
            return [tool.name for tool in rules.items]


def cache_rows(store, targets: dict[str, str]) -> list[list[str]]:
    """The keys of an ``InMemoryResponseCacheStore`` as rows (method, scope, era, target, partition).

    ``targets`` maps a readable name to the ``CacheConfig.target_id`` it stands for; the key
    holds only the target's SHA-256, which is shown by that name.
    """
    import hashlib

    names = {hashlib.sha256(t.encode()).hexdigest(): n for n, t in targets.items()}
    rows = []
    for key in store._entries:  # the default store keeps its keys in a dict (read-only look)
        scope, era, arm, *partition = json.loads(key.partition)
        rows.append([key.method, repr(key.params_key), scope, era, names.get(arm, "(uuid)"),
                     partition[0] if partition else "(shared)"])
    return rows


def cache_table(store, targets: dict[str, str], title: str | None = None) -> Table:
    return Table(["method", "params_key", "scope", "era", "target", "partition"], cache_rows(store, targets), title)


def tamper(state: str, **changes: Any) -> str:
    """``request_state`` with some fields changed, as an attacker would try.

    A plain JSON state is edited directly. A state with a readable part (a dot-separated part
    that is base64 of a JSON object, as in ``base64(payload).tag``) gets that part edited and
    the rest kept: the attacker cannot compute a new tag. A state with nothing readable gets
    its last letter or digit changed.
    """
    compact = {"sort_keys": True, "separators": (",", ":")}
    if state.startswith("{"):
        return json.dumps({**json.loads(state), **changes}, **compact)
    parts = state.split(".")
    for i, part in enumerate(parts):
        try:
            payload = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
        except ValueError:
            continue
        if isinstance(payload, dict):
            edited = base64.urlsafe_b64encode(json.dumps({**payload, **changes}, **compact).encode()).decode()
            return ".".join(parts[:i] + [edited.rstrip("=") if len(part) % 4 else edited] + parts[i + 1:])
    for i in range(len(state) - 1, -1, -1):
        if state[i].isascii() and state[i].isalnum():
            new = "0" if state[i] != "0" else "1"
            return state[:i] + new + state[i + 1:]
    return state + "x"


def read_state(state: str) -> dict:
    """What a client can read in a ``request_state`` (sealed states are signed, not encrypted)."""
    if state.startswith("{"):
        return json.loads(state)
    return json.loads(base64.urlsafe_b64decode(state.rpartition(".")[0].encode()))


Answer = Callable[[str, types.ElicitRequestParams], Awaitable[types.ElicitResult]]


async def call_by_hand(session, name: str, arguments: dict, answer: Answer, *, max_rounds: int = 4,
                       edit_state: Callable[[int, str], str] | None = None) -> tuple[types.CallToolResult, list[list]]:
    """Drive ``tools/call`` through its ``input_required`` rounds without the Client's driver.

    Each round answers every embedded elicitation with ``answer(key, params)`` and resends the
    call with the responses and the echoed ``request_state`` (``edit_state(round, state)`` may
    replace it, to show what a server does with a state it did not issue). Returns the final
    result and one row per round: round, result type, input keys, state fields.
    """
    responses = None
    state = None
    log: list[list] = []
    for round_number in range(1, max_rounds + 1):
        result = await session.call_tool(name, arguments, allow_input_required=True,
                                          input_responses=responses, request_state=state)
        if not isinstance(result, types.InputRequiredResult):
            log.append([round_number, "complete", "", ""])
            return result, log
        keys = sorted(result.input_requests or {})
        state = result.request_state
        log.append([round_number, "input_required", ", ".join(keys), _fields(state)])
        responses = {key: await answer(key, result.input_requests[key].params) for key in keys}
        if edit_state is not None and state is not None:
            state = edit_state(round_number, state)
    raise CourseError(f"{name!r} still needs input after {max_rounds} rounds", reason="input_rounds")


def _fields(state: str | None) -> str:
    if state is None:
        return ""
    try:
        data = read_state(state)
    except ValueError:
        return "(opaque)"
    return ", ".join(f"{k}={v}" for k, v in sorted(data.items()))


# The production checklist: each item, what it means here, and the chapter (and lab) that shows it,
# or NOT_SHOWN when no lab of the course runs it.
NOT_SHOWN = "not shown in this course"
CHECKLIST = (
    ("Authorise every call", "remote tokens: check audience, scope, expiry and signature", NOT_SHOWN),
    ("Authorise every call", "partition the cache by principal; share_public only for public results",
     "09_stateless_cache (cache partitions)"),
    ("Authorise every call", "request_state is bound to its call by an HMAC; a client cannot edit it",
     "09_stateless_cache (request_state)"),
    ("Least privilege and approval", "a charge happens only after an input_required approval round",
     "09_stateless_cache (input_required)"),
    ("Least privilege and approval", "resources are served from an allowlist, never by path arithmetic",
     "04_resources_and_uris"),
    ("Untrusted input", "check arguments in the handler; an input schema is only a contract",
     "08_stateless_wire (input schema)"),
    ("Untrusted input", "cursors are opaque and verified; forged, expired, foreign: -32602",
     "06_paginating_server (signed cursors)"),
    ("Untrusted input", "resource URIs arrive in odd spellings; match them exactly",
     "04_resources_and_uris"),
    ("Untrusted output", "adopt only complete, valid listings; a rejected refresh changes nothing",
     "03_schema_cache"),
    ("Untrusted output", "exceptions: sanitised -32603 at 2026-07-28, leaked with code 0 on legacy",
     "08_stateless_wire (error shapes)"),
    ("Transport", "HTTP: refuse a foreign Origin or Host; bind to 127.0.0.1 when local",
     "08_stateless_wire (stdio or HTTP)"),
    ("Transport", "HTTP: TLS for every remote server", NOT_SHOWN),
    ("Limits and timeouts", "page and item budgets end every walk",
     "01_pagination (budgets), 02_cursor_failures (budgets)"),
    ("Limits and timeouts", "input_required rounds are capped (input_required_max_rounds)",
     "09_stateless_cache (input_required)"),
    ("Limits and timeouts", "every lab has a request and a lab budget; no server outlives its lab",
     "00_orientation"),
    ("Limits and timeouts", "rate and concurrency limits per caller", NOT_SHOWN),
    ("Supply chain", "pinned dependencies: expectations refuse another SDK version",
     "08_stateless_wire (sdk_version)"),
    ("Audit", "the wire transcript of every lab, both directions, in order",
     "00_orientation, 08_stateless_wire"),
    ("Audit", "server-side request audits compared exactly with fixed expectations",
     "03_schema_cache, 05_snapshot_bundles"),
    ("Recovery", "idempotency keys, so a retried call with side effects acts once", NOT_SHOWN),
)


def _chapter_numbers(lab: str) -> str:
    """``09_stateless_cache (request_state)`` -> ``10 (request_state)``: short enough for a slide."""
    return re.sub(r"\b(\d\d)_[a-z0-9_]+", r"\1", lab)


def checklist_table() -> Table:
    """Each item on a line of its own, then what it means in practice and where the course shows it."""
    rows: list[list[str]] = []
    previous = None
    for item, practice, lab in CHECKLIST:
        if item != previous:
            rows.append([item, ""])
            previous = item
        rows.append(["  " + practice, _chapter_numbers(lab)])
    return Table(["item, and what it means in practice", "shown in"], rows)
