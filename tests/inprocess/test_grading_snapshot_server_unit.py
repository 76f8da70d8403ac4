"""In-process: the checks of tests/stdio/test_grading_snapshot_server.py's subject that start no process."""
import pytest
from mcp import MCPError

from course_lib.grading.child import module_source
from course_lib.uris import missing

pytestmark = pytest.mark.anyio
UNAVAILABLE = -31001  # the snapshot's own application-defined code, the same in both eras
GONE = "Snapshot unavailable; reacquire the whole bundle"


def parts(store, uri):
    revision, _, document = uri.removeprefix(store.base).partition("/")
    return revision, document


def only_r1_gone(store, uri):
    """Knows that r1 was dropped, and nothing else: r9 falls back to the current revision."""
    revision, document = parts(store, uri)
    if revision == "r1" and revision not in store.revisions:
        raise MCPError(UNAVAILABLE, GONE)
    docs = store.revisions.get(revision, store.revisions[store.current])
    if document not in docs:
        raise missing(uri, store.protocol_version)
    return "text/plain", docs[document]


def test_the_server_file_holds_the_function_and_what_it_uses():
    source = module_source(only_r1_gone)
    for needed in ("def only_r1_gone(", "def parts(", "GONE = ", "UNAVAILABLE = ", "MCPError"):
        assert needed in source
    compile(source, "student_server.py", "exec")
