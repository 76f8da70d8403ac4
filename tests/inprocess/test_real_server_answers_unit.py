"""In-process: the checks of tests/world/test_real_server_answers.py's subject that start no process.

What real third-party servers exposed in the course's tools, each fixed and held here.

- the strict line client reads a server's own notification as the reply (``server-everything``
  sends ``notifications/message`` after the handshake): it now records it and waits on;
- the strict client had no ``env=``/``cwd=`` and failed every server that logs to stderr;
- ``raw_lines`` started course servers only;
- ``is_not_found`` knew one family of answers; ``not_found`` names the code each server used;
- ``connect`` showed a forced stop only as a negative code, and a server without the 2026-07-28
  era as a bare ``-32602``/``-32603``.

The answers below were recorded from the real servers named (pinned versions in
the course's notes; server-everything 2025.12.18, pinned in fixtures/peers, runs here live).
"""
import pytest
from mcp import MCPError
from course_lib.uris import is_not_found, not_found

pytestmark = pytest.mark.anyio

# Each real server's answer to resources/read of a URI it does not serve (recorded; see the module doc).
NOT_FOUND_ANSWERS = [
    ("spec 2025-11-25 / course atlas classic", {"code": -32002, "message": "Resource not found",
                                                "data": {"uri": "x://a"}}, "resource-not-found", True),
    ("FastMCP 4.1.6 / SEP-2164", {"code": -32602, "message": "Unknown resource: x://a", "data": {"uri": "x://a"}},
     "invalid-params-uri", True),
    ("TypeScript SDK servers", {"code": -32602, "message": "Resource x://a not found"}, "invalid-params", False),
    ("server-everything 2025.12.18", {"code": -32603, "message": "Unknown resource: x://a"}, "internal-error", False),
    ("Python SDK 1.x servers", {"code": 0, "message": "Unknown resource: x://a"}, "code-0", False),
]


@pytest.mark.parametrize("server,error,kind,recognisable", NOT_FOUND_ANSWERS, ids=[a[0] for a in NOT_FOUND_ANSWERS])
def test_not_found_names_each_real_answer(server, error, kind, recognisable):
    answer = not_found(error)
    assert (answer.code, answer.kind, answer.recognisable) == (error["code"], kind, recognisable)
    exc = MCPError(error["code"], error["message"], error.get("data"))
    assert not_found(exc) == answer  # the SDK's exception and the wire's dict agree
    assert is_not_found(exc) is recognisable
