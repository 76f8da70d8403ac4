"""In-process: the checks of tests/stdio/test_grading_snapshot_server.py's subject that start no process."""
import pytest
from mcp import MCPError

from course_lib.grading.child import module_source
from course_lib.servers.snapshot import Snapshots
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


# -- the starter and known-wrong read functions (recorded: fixtures/grading/transcripts/snapshot_server.expected.json;
# wrong_code and unlooked are graded on real stdio servers too, tests/stdio/test_grading_snapshot_server.py) ------

def starter(store, uri):
    raise NotImplementedError("write your read handler here")


def wrong_code(store, uri):
    """Refuses a revision it does not hold with -32602, the code of an invalid argument."""
    revision, document = parts(store, uri)
    if revision not in store.revisions or document not in store.revisions[revision]:
        raise MCPError(-32602, GONE)
    return "text/plain", store.revisions[revision][document]


def unlooked(store, uri):
    """Indexes the store without looking first: a KeyError for every URI it does not hold."""
    revision, document = parts(store, uri)
    return "text/plain", store.revisions[revision][document]


def falls_back(store, uri):
    """The bug the chapter shows: a revision it no longer has is answered with the current one."""
    revision, document = parts(store, uri)
    docs = store.revisions.get(revision, store.revisions[store.current])
    if not uri.startswith(store.base) or document not in docs:
        raise missing(uri, store.protocol_version)
    return "text/plain", docs[document]


def pinned(revision):
    return revision[:1] == "r" and revision[1:].isdigit()


def serves_current(store, uri):
    """Reads the document's name from the URI and answers the current revision's text."""
    revision, document = parts(store, uri)
    if revision not in store.revisions:
        raise MCPError(UNAVAILABLE, GONE) if pinned(revision) else missing(uri, store.protocol_version)
    if document not in store.revisions[store.current]:
        raise missing(uri, store.protocol_version)
    return "text/plain", store.revisions[store.current][document]


def first_segment(store, uri):
    """Takes the first path segment after the revision as the document: r2/design/extra is served."""
    revision, document = parts(store, uri)
    if revision not in store.revisions:
        raise MCPError(UNAVAILABLE, GONE)
    document = document.split("/")[0]
    if document not in store.revisions[revision]:
        raise missing(uri, store.protocol_version)
    return "text/plain", store.revisions[revision][document]


def markdown(store, uri):
    """The right texts, as text/markdown."""
    revision, document = parts(store, uri)
    if pinned(revision) and revision not in store.revisions:
        raise MCPError(UNAVAILABLE, GONE)
    if revision not in store.revisions or document not in store.revisions[revision]:
        raise missing(uri, store.protocol_version)
    return "text/markdown", store.revisions[revision][document]


def vague(store, uri):
    """The era's not-found for every miss, where the revision is gone too."""
    revision, document = parts(store, uri)
    if revision not in store.revisions or document not in store.revisions[revision]:
        raise missing(uri, store.protocol_version)
    return "text/plain", store.revisions[revision][document]


def borrowed(store, uri):
    """The course server's own read side, fed the store: the exercise asks for it, so it is unavailable."""
    state = Snapshots("expired")
    state.retained, state.current = set(store.revisions), store.current
    return state.read(uri)


def test_the_server_file_holds_the_function_and_what_it_uses():
    source = module_source(only_r1_gone)
    for needed in ("def only_r1_gone(", "def parts(", "GONE = ", "UNAVAILABLE = ", "MCPError"):
        assert needed in source
    compile(source, "student_server.py", "exec")
