"""In-process: the checks of tests/world/test_real_server_answers.py's subject that start no process."""
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
