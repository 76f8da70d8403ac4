"""In-process: the checks of tests/stdio/test_atlas_allowlist.py's subject that start no process."""
import json

import pytest
from course_lib.paths import fixture
from course_lib.tooling.student_copy import reference_solution

pytestmark = pytest.mark.anyio

RULES = json.loads(fixture("atlas", "allowlist_rules.json").read_text(encoding="utf-8"))
ROWS = RULES["rows"]


def rows_of(library: str) -> list[dict]:
    return [row for row in ROWS if row.get("library", "chapter") == library]


def test_rows_cover_every_rule_once_per_name():
    assert len({row["name"] for row in ROWS}) == len(ROWS)
    assert {row["rule"] for row in ROWS} >= {
        "allowed", "case", "trailing-slash", "dot-segment", "encoded-dot-segment", "encoded-slash", "hex-case",
        "encoding", "double-encoding", "query", "fragment", "whitespace", "inner-whitespace", "nul"}
    allowed = {row["expect"].get("allowed") for row in ROWS} - {None}
    assert allowed == set(RULES["markers"])


def test_every_row_on_the_chapters_reference_check():
    name_of = reference_solution("04_resources_and_uris.ipynb", "reference_name_of")
    documents = json.loads(fixture("atlas", "documents.json").read_text(encoding="utf-8"))
    base = documents["base"]
    wrong = [f"row {row['name']!r}" for row in rows_of("chapter")
             if (name_of(row["uri"], base) in documents["documents"]) != ("allowed" in row["expect"])]
    assert not wrong, "\n".join(wrong)


# -- chapter 8's stored tables, held to the hand-written oracle -----------------------------------

def chapter_rows(source_contains: str) -> list[dict[str, str]]:
    from course_lib.paths import NOTEBOOKS
    from course_lib.tooling.regen import stored_rows

    return stored_rows(NOTEBOOKS / "04_resources_and_uris.ipynb", source_contains)


EXPECTED = json.loads(fixture("atlas", "expected.json").read_text(encoding="utf-8"))


def test_the_four_version_pairings_match_the_hand_written_columns():
    rows = chapter_rows("old_old = [label_129(e)")
    base = "project://atlas/docs/"
    want = [[row["uri"].removeprefix(base) or "(the base)", row["sdk_2_3_0"], *[row["sdk_1_29_0"]] * 3]
            for row in EXPECTED["uri_rows"]]
    got = [[r["URI sent (after the base)"], r["2.3.0→2.3.0"], r["2.3.0→1.29.0"], r["1.29.0→2.3.0"],
            r["1.29.0→1.29.0"]] for r in rows]
    assert got == want
