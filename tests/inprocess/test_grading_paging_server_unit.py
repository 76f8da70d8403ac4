"""In-process: the checks of tests/stdio/test_grading_paging_server.py's subject that start no process, and the
page functions whose recorded rows (fixtures/grading/transcripts/paging_server.json) are judged in process."""
import base64
import hashlib
import hmac
import json
import secrets

import mcp_types as types
import pytest
from mcp import MCPError
from course_lib.grading.child import module_source
from course_lib.grading.paging_server import tamper

pytestmark = pytest.mark.anyio


def signature(key, body):
    return hmac.new(key, body.encode(), hashlib.sha256).hexdigest()


def signed(catalog, claim):
    body = base64.urlsafe_b64encode(json.dumps(claim).encode()).decode()
    return f"{body}.{signature(catalog.key, body)}"


def claim_of(cursor, catalog):
    body, _, mac = cursor.partition(".")
    try:
        claim = json.loads(base64.urlsafe_b64decode(body))
    except ValueError:
        claim = None
    if not isinstance(claim, dict) or not hmac.compare_digest(mac.encode(), signature(catalog.key, body).encode()):
        raise MCPError(types.INVALID_PARAMS, "Invalid cursor")
    return claim


def bound_page(cursor, catalog, fields):
    """Signed pages whose claim binds only ``fields`` of the catalog (and the offset)."""
    bound = lambda offset: {**{f: getattr(catalog, f) for f in fields}, "o": offset}  # noqa: E731
    start = 0
    if cursor is not None:
        claim = claim_of(cursor, catalog)
        if claim != bound(claim.get("o")):
            raise MCPError(types.INVALID_PARAMS, "Invalid cursor: not for this server, list or generation")
        start = claim["o"]
    end = start + catalog.page_size
    more = end < len(catalog.names)
    return catalog.names[start:end], (signed(catalog, bound(end)) if more else None)


def no_generation(cursor, catalog):
    """Signed and bound to the server, its process and its list, but blind to the generation."""
    return bound_page(cursor, catalog, ("name", "process", "kind"))


def starter(cursor, catalog):
    raise NotImplementedError("write your page function here")


def no_process(cursor, catalog):
    """Bound to the server, its list and the generation: an earlier process's cursor still reads."""
    return bound_page(cursor, catalog, ("name", "kind", "generation"))


def no_list(cursor, catalog):
    """Bound to the server, its process and the generation: a tools cursor reads as a prompts one."""
    return bound_page(cursor, catalog, ("name", "process", "generation"))


def crashes_on_garbage(cursor, catalog):
    """Reads the claim before it checks anything: a cursor that is not base64 JSON crashes it."""
    start = 0 if cursor is None else json.loads(base64.urlsafe_b64decode(cursor.partition(".")[0]))["o"]
    end = start + catalog.page_size
    return catalog.names[start:end], (signed(catalog, {"o": end}) if end < len(catalog.names) else None)


def restarts(cursor, catalog):
    """Serves page 1 for any cursor it cannot read: a silently restarted walk."""
    try:
        start = 0 if cursor is None else claim_of(cursor, catalog)["o"]
    except MCPError:
        start = 0
    end = start + catalog.page_size
    more = end < len(catalog.names)
    return catalog.names[start:end], (signed(catalog, {"g": catalog.generation, "o": end}) if more else None)


def fresh_tokens(cursor, catalog):
    """A new random token every time a page is served: the same cursor never gives the same page twice."""
    start = 0 if cursor is None else int(cursor.split("-")[0])
    end = start + catalog.page_size
    more = end < len(catalog.names)
    return catalog.names[start:end], (f"{end}-{secrets.token_hex(4)}" if more else None)


def wrong_code(cursor, catalog):
    """Refuses every cursor, with -32600 (Invalid request) instead of -32602."""
    if cursor is not None:
        raise MCPError(types.INVALID_REQUEST, "bad cursor")
    return catalog.names[:2], "next"


def not_a_page(cursor, catalog):
    return "alpha"  # not (names, next_cursor)


def test_the_server_file_holds_the_function_and_what_it_uses():
    source = module_source(no_generation)
    for needed in ("def no_generation(", "def claim_of(", "def signed(", "def signature(", "import hmac"):
        assert needed in source
    compile(source, "student_server.py", "exec")


@pytest.mark.parametrize("cursor, tampered", [("2", "3"), ("abc.ff9", "abc.ff0"), ("x.fz", "x.fa"), ("--", "--x")])
def test_tamper_changes_the_last_letter_or_digit(cursor, tampered):
    assert tamper(cursor) == tampered
