"""The atlas allowlist, one rule per row: fixtures/atlas/allowlist_rules.json (written by hand)
against a real atlas server in both eras, and against chapter 8's reference allowlist check.

Every row is sent verbatim with ``resources/read``. An allowed row must return exactly its
document under the URI asked for; a refused row must be the not-found error carrying the URI
unchanged. All rows run on one connection per era and library, and every wrong row is named.
"""
import json

import pytest
from mcp import MCPError

from course_lib import connect
from course_lib.paths import fixture

from test_atlas_allowlist_unit import rows_of

pytestmark = pytest.mark.anyio

RULES = json.loads(fixture("atlas", "allowlist_rules.json").read_text(encoding="utf-8"))
LIBRARIES = ("chapter", "extended")


def extended_documents(tmp_path):
    """The chapter's documents file with the fixture's extra documents added."""
    data = json.loads(fixture("atlas", "documents.json").read_text(encoding="utf-8"))
    data["documents"] = {**data["documents"], **RULES["extra_documents"]}
    path = tmp_path / "documents.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


NOT_FOUND = {"legacy": -32002, "2026-07-28": -32602}  # the course's one rule, per era


async def answer(lab, uri: str, era: str) -> dict:
    """What the server answered, in the fixture's terms, or a description of anything unexpected."""
    try:
        result = await lab.session.read_resource(uri)
    except MCPError as exc:
        error = exc.error
        if (error.code, error.message, error.data) != (NOT_FOUND[era], RULES["refusal_message"], {"uri": uri}):
            return {"refused": error.code, "message": error.message, "data": error.data}
        return {"refused": "not-found"}
    found = [name for name, marker in RULES["markers"].items() if marker in result.contents[0].text]
    if [c.uri for c in result.contents] != [uri] or len(found) != 1:
        return {"allowed": f"{[c.uri for c in result.contents]} with markers of {found}"}
    return {"allowed": found[0]}


@pytest.mark.parametrize("library", LIBRARIES)
async def test_every_row_on_a_real_atlas_server(library, era, tmp_path):
    documents = extended_documents(tmp_path) if library == "extended" else None
    rows = rows_of(library)
    async with connect("atlas", era=era, fixture=documents) as lab:
        got = {row["name"]: await answer(lab, row["uri"], era) for row in rows}
    wrong = [f"row {row['name']!r}: expected {row['expect']}, got {got[row['name']]}"
             for row in rows if got[row["name"]] != row["expect"]]
    assert not wrong, "\n".join(wrong)
    # The server saw every URI exactly as it was sent.
    seen = [r["uri"] for r in json.loads(lab.file("audit.json"))["requests"] if r["method"] == "resources/read"]
    assert seen == [row["uri"] for row in rows]
    assert (lab.stderr, lab.noise) == ("", [])
