"""Cursor hygiene, on every list the list probe walked, in another process than the walk's.

On a list that paginates: replaying an issued cursor gives the same page; a forged, a non-string,
an ``""`` (when the server never issued it) and another process's cursor each get ``-32602`` (the
spec's SHOULD: "invalid cursors SHOULD result in an error with code -32602"). A tampered cursor is
a well-formed edit where the cursor can be read (``edits``: a number changed, a field changed,
another list's cursor); one that is served is a FAIL (the course's MUST: a cursor is bound to its
list and cannot be edited), since a client reads the page it gets as the next one.
In the 2026-07-28 era a server is stateless by design, so another process's cursor being served
is reported, not warned about. On a list that does not paginate, what a forged cursor gets is
reported (most real servers serve page 1 again).
"""
from __future__ import annotations

from course_lib.audit.cursor_edits import OPAQUE, edits
from course_lib.audit.session import Context, ProbeFailed, Work, describe_error, error_of, in_sessions
from course_lib.protocol import INVALID_PARAMS, LEGACY
from course_lib.walker import KINDS, WIRE_LISTS, WIRE_METHODS

FORGED = "course-audit-forged-cursor"
RULE = "SHOULD (spec: pagination, invalid cursors)"
STABLE = "SHOULD (spec: pagination, stable cursors)"
BOUND = "MUST (course: a cursor is bound to its list; an edited cursor is refused)"


def _identities(kind: str, result: dict) -> list:
    wire_key, key = WIRE_LISTS[kind]
    return [item.get(key) for item in result.get(wire_key) or [] if isinstance(item, dict)]


def outcome(reply: dict, kind: str | None = None) -> tuple[bool, str]:
    """``(refused with -32602, what the server answered)``; with ``kind``, the items served are named."""
    error = error_of(reply)
    if error is not None:
        return error.get("code") == INVALID_PARAMS, f"error {describe_error(error)}"
    result = reply.get("result") or {}
    items = [k for k in result if isinstance(result[k], list)]
    count = len(result[items[0]]) if items else 0
    named = ", ".join(map(str, _identities(kind, result)[:3])) if kind else ""
    return False, f"served a page of {count} item{'s' * (count != 1)}" + (f" ({named})" if named else "")


async def _tampered(wire, kind: str, era: str, cursor: str, others: list[str], page_1: set, report) -> None:
    """Each well-formed edit of ``cursor`` (or its last character changed, when it cannot be read)."""
    tried, served = [], []
    for what, value in edits(cursor, others):
        reply = await wire.request(WIRE_METHODS[kind], {"cursor": value})
        refused, said = outcome(reply, kind)
        tried.append((what, refused, said))
        if error_of(reply) is None:
            again = len(page_1 & set(_identities(kind, reply.get("result") or {})))
            served.append(f"{what}: {said}" + (f", {again} of them on page 1 too" if again else ""))
    well_formed = [text for text in served if not text.startswith(OPAQUE)]
    if well_formed:
        report.add("cursor.tampered", "FAIL", BOUND, era, well_formed[0] + (
            f" ({len(served)} of {len(tried)} edits served)" if len(tried) > 1 else ""), kind)
    elif served:  # only an opaque cursor's edit: what any forged cursor gets
        report.add("cursor.tampered", "WARN", RULE, era, f"{served[0]}, not -32602", kind)
    elif all(refused for _, refused, _ in tried):
        report.add("cursor.tampered", "PASS", RULE, era, "; ".join(what for what, _, _ in tried) + ": -32602", kind)
    else:
        what, _, said = next(t for t in tried if not t[1])
        report.add("cursor.tampered", "WARN", RULE, era, f"{what}: {said}, not -32602", kind)


async def _hygiene(wire, kind: str, era: str, foreign: str | None, issued: list[str], others: list[str],
                   report) -> None:
    method = WIRE_METHODS[kind]
    first = await wire.request(method, None)
    if error_of(first) is not None:
        raise ProbeFailed("page_1", f"page 1 refused this time: {describe_error(error_of(first))}")
    cursor = first["result"].get("nextCursor")
    if not isinstance(cursor, str):
        report.add("cursor.replay", "WARN", STABLE, era, "this process's page 1 carried no cursor", kind)
        return
    replies = [await wire.request(method, {"cursor": cursor}) for _ in range(2)]
    if any(error_of(r) is not None for r in replies):
        report.add("cursor.replay", "WARN", STABLE, era, f"a replay of an issued cursor was refused: "
                   f"{outcome(next(r for r in replies if error_of(r) is not None))[1]}", kind)
    else:
        same = _identities(kind, replies[0]["result"]) == _identities(kind, replies[1]["result"])
        report.add("cursor.replay", "PASS" if same else "WARN", STABLE, era,
                   "the same cursor gave the same page twice" if same else
                   "the same cursor gave two different pages", kind)
    if cursor:
        await _tampered(wire, kind, era, cursor, others, set(_identities(kind, first["result"])), report)
    else:
        report.add("cursor.tampered", "INFO", RULE, era, "not probed: the cursor is empty", kind)
    probes = [("cursor.forged", FORGED, "a cursor this server never issued"),
              ("cursor.non-string", 1, "the number 1 as the cursor")]
    probes.append(("cursor.empty", "" if "" not in issued and cursor != "" else None, '"" (never issued)'))
    probes.append(("cursor.foreign", foreign if foreign not in (None, cursor) else None,
                   "a cursor another process (HTTP: session) of this server issued"))
    for check, value, what in probes:
        if value is None:
            reason = {"cursor.empty": "the server issues \"\" itself",
                      "cursor.foreign": "every process (HTTP: session) issues the same cursors"
                      if foreign == cursor else "no other process's cursor"}[check]
            report.add(check, "INFO", RULE, era, f"not probed: {reason}", kind)
            continue
        refused, said = outcome(await wire.request(method, {"cursor": value}))
        if refused:
            report.add(check, "PASS", RULE, era, f"{what}: -32602", kind)
        elif check == "cursor.foreign" and era != LEGACY:
            report.add(check, "INFO", RULE, era, f"{what}: {said} (a stateless server may serve it)", kind)
        else:
            report.add(check, "WARN", RULE, era, f"{what}: {said}, not -32602", kind)


def work(ctx: Context, era: str) -> Work | None:
    """The cursor probe of ``era``: every list the list probe read (None: nothing to probe)."""
    listings = {kind: listing for kind, listing in ctx.lists.get(era, {}).items()
                if listing.complete or listing.paginates}  # a walk that failed later still issued cursors
    if not listings:
        return None
    other = {kind: (listing.cursors[0] if listing.cursors else None) for kind, listing in listings.items()}
    at = {"kind": next(iter(listings))}

    async def body(wire, report) -> None:
        for kind, listing in listings.items():
            at["kind"] = kind
            if listing.paginates:
                others = [c for k, c in other.items() if k != kind and c is not None]
                await _hygiene(wire, kind, era, other[kind], listing.cursors, others, report)
                continue
            _, said = outcome(await wire.request(WIRE_METHODS[kind], {"cursor": FORGED}))
            report.add("cursor.unpaged", "INFO", RULE, era, f"one page, no cursor issued; a forged cursor: {said}", kind)

    return Work("cursors", body, lambda: f"cursors of {at['kind']}: ")


async def run(ctx: Context, era: str, report) -> None:
    await in_sessions(ctx, era, report, [work(ctx, era)])


__all__ = ["FORGED", "KINDS", "run", "work"]
