"""In-process: the checks of tests/stdio/test_line_client_envelope.py's subject that start no process."""
import json
import nbformat
import pytest

from course_lib.chapters.envelope_controls import check_reply_with_asserts
from course_lib.paths import NOTEBOOKS
from course_lib.line_client import CHECKS, LineClient, WireError, check_reply, require

pytestmark = pytest.mark.anyio
CHAPTER = NOTEBOOKS / "08_stateless_wire.ipynb"


async def test_wrong_sdk_stops_before_spawning():
    # A command that cannot start: reaching the spawn would raise LaunchError instead.
    wire = LineClient(["/nonexistent/server-binary"], sdk="1.29.0")
    with pytest.raises(WireError) as caught:
        async with wire:
            pass
    assert caught.value.check == "sdk_version" and not wire.started


@pytest.mark.parametrize("line,reason", [
    (b'{"jsonrpc":"2.0","id":1,"result":{}}', None),
    (b"server ready", "stdout_noise"),
    (b"[1]", "response_object"),
    (b'{"jsonrpc":"1.0","id":1,"result":{}}', "jsonrpc_version"),
    (b'{"id":1,"result":{}}', "jsonrpc_version"),
    (b'{"jsonrpc":"2.0","id":true,"result":{}}', "id_type"),
    (b'{"jsonrpc":"2.0","id":"1","result":{}}', "id_type"),
    (b'{"jsonrpc":"2.0","result":{}}', "id_type"),
    (b'{"jsonrpc":"2.0","id":2,"result":{}}', "id_match"),
    (b'{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}', "result_xor_error"),
    (b'{"jsonrpc":"2.0","id":1}', "result_xor_error"),
])
def test_check_reply_names_the_first_broken_rule(line, reason):
    if reason is None:
        assert check_reply(line, 1) == json.loads(line)
        return
    assert reason in CHECKS
    with pytest.raises(WireError) as caught:
        check_reply(line, 1)
    assert caught.value.check == reason


def test_assert_checker_accepts_a_boolean_id_even_without_O():
    assert check_reply_with_asserts(b'{"jsonrpc":"2.0","id":true,"result":{}}', 1)["id"] is True


OUTCOME = """
def outcome(check, line):
    try:
        check(line, 1)
        return "accepted"
    except WireError as exc:
        return exc.check
    except Exception as exc:
        return type(exc).__name__
"""


def chapter_check_start():
    """The chapter's ``check_start`` cell, run as it is written."""
    nb = nbformat.read(CHAPTER, as_version=4)
    (source,) = [c.source for c in nb.cells if c.cell_type == "code" and c.source.startswith("def check_start(")]
    namespace = {"json": json, "WireError": WireError, "require": require}
    exec(compile(source, "check_start", "exec"), namespace)
    return namespace["check_start"]


def test_the_cell_written_checks_agree_with_check_reply_on_their_three_rules():
    check_start = chapter_check_start()
    lines = [b'{"jsonrpc":"2.0","id":1,"result":{}}', b"atlas server ready", b"[1]",
             b'{"jsonrpc":"1.0","id":1,"result":{}}', b'{"jsonrpc":"2.0","id":true,"result":{}}',
             b'{"jsonrpc":"2.0","id":2,"result":{}}', b'{"jsonrpc":"2.0","id":1}',
             b'{"jsonrpc":"2.0","method":"notifications/message","params":{}}']

    namespace = {"WireError": WireError}
    exec(OUTCOME, namespace)  # the same outcome the python -O child reports
    outcome = namespace["outcome"]
    first = ("stdout_noise", "response_object", "jsonrpc_version")
    rows = [(outcome(check_start, line), outcome(check_reply, line)) for line in lines]
    assert rows == [("accepted", "accepted"), *((c, c) for c in first), ("accepted", "id_type"),
                    ("accepted", "id_match"), ("accepted", "result_xor_error"), ("accepted", "id_type")]
