"""The appendix's reference table of SDK 1.29.0 -> 2.3.0 changes, read from fixtures/sdk_changes/.

Every row names the test that shows it: that test must exist under tests/ (the suite runs it).
The loader refuses a malformed file with a typed error that names the file.
"""
import ast
import json
from functools import cache

import pytest

from course_lib import sdk_changes
from course_lib.errors import CourseError
from course_lib.paths import NOTEBOOKS, ROOT

ROWS = sdk_changes.load()


@cache
def defined_tests(path: str) -> set[str]:
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    return {node.name for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test")}


def test_there_are_rows_and_every_file_is_a_chapter():
    assert ROWS
    for path in sorted(sdk_changes.FOLDER.glob("*.json")):
        chapter = json.loads(path.read_text(encoding="utf-8"))["chapter"]
        assert (NOTEBOOKS / f"{chapter}.ipynb").exists(), f"{path.name}: no chapter {chapter}"


@pytest.mark.parametrize("row", ROWS, ids=[f"{r.number}:{r.test.split('::')[-1]}" for r in ROWS])
def test_each_row_names_a_test_that_exists(row):
    path, _, name = row.test.partition("::")
    assert (ROOT / path).is_file(), f"{row.test}: no file {path}"
    assert name.partition("[")[0] in defined_tests(path), f"{row.test}: no test named {name} in {path}"


def test_the_table_has_two_lines_per_change_in_chapter_order():
    table = sdk_changes.changes_table()
    assert [r[0] for r in table.rows[::2]] == sorted(r.number for r in ROWS)
    assert [r[1] for r in table.rows[1::2]] == ["→ " + r.test.removeprefix("tests/") for r in ROWS]
    assert len(str(table).splitlines()) >= 2 + 2 * len(ROWS)  # a long change wraps inside its column
    assert all(len(line) <= 100 for line in str(table).splitlines())


@pytest.mark.parametrize("row", ROWS, ids=[f"{r.number}:{r.test.split('::')[-1]}" for r in ROWS])
def test_each_change_is_one_short_sentence(row):
    assert len(row.change) <= 2 * sdk_changes.CHANGE_WIDTH, f"{row.chapter}: shorten {row.change!r}"
    assert row.change.rstrip().endswith((".", ")", "`")) or row.change[-1].isalnum(), row.change


@pytest.mark.parametrize("name, text, why", [
    ("09.json", "{not json", "not JSON"),
    ("09.json", '{"chapter": "09_x"}', "expected"),
    ("08.json", '{"chapter": "09_x", "changes": []}', "does not match the file name"),
    ("09.json", '{"chapter": "09_x", "changes": [{"change": "c"}]}', "row 1"),
    ("09.json", '{"chapter": "09_x", "changes": [{"change": "c", "test": "test_x"}]}', "tests/FILE.py::test_name"),
])
def test_a_malformed_file_is_a_typed_error_naming_it(tmp_path, name, text, why):
    (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(CourseError, match=why) as caught:
        sdk_changes.load(tmp_path)
    assert caught.value.reason == "sdk_changes" and name in str(caught.value)
