"""In-process: the checks of tests/stdio/test_atlas.py's subject that start no process."""
import json
import pytest
from mcp import MCPError
from course_lib.paths import fixture
from course_lib.uris import expand, is_not_found, sdk_1_29_uri

pytestmark = pytest.mark.anyio

EXPECTED = json.loads(fixture("atlas", "expected.json").read_text(encoding="utf-8"))
ROWS = EXPECTED["uri_rows"]


def test_oracle_has_the_seventeen_rows():
    groups = [r["group"] for r in ROWS]
    assert (groups.count("allowed"), groups.count("normalised"), groups.count("hostile")) == (3, 3, 11)
    assert len({r["uri"] for r in ROWS}) == 17


@pytest.mark.parametrize("row", ROWS, ids=[r["uri"] for r in ROWS])
def test_pydantic_anyurl_gives_the_1_29_form(row):
    assert sdk_1_29_uri(row["uri"]) == row["anyurl_1_29_0"]


def test_expand_encodes_one_segment():
    for case in EXPECTED["expansions"]:
        if case["how"] == "quote(name, safe='')":
            assert expand(EXPECTED["template"], name=case["name"]) == case["uri"]
    with pytest.raises(ValueError, match="needs"):
        expand(EXPECTED["template"], title="design")


def test_is_not_found_accepts_both_codes_only():
    def err(code, data=None):
        return MCPError(code, "x", data)
    assert is_not_found(err(-32002))
    assert is_not_found(err(-32602, {"uri": "project://atlas/docs/x"}))
    assert not is_not_found(err(-32602, {"cursor": "c"}))  # an invalid cursor is not "not found"
    assert not is_not_found(err(-32602))
    assert not is_not_found(err(-32601))
    assert not is_not_found(ValueError("-32002"))
