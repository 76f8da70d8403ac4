"""The course's one reference of what changed between SDK 1.29.0 and 2.3.0 (and between eras).

Each chapter writes its rows in ``fixtures/sdk_changes/NN.json``::

    {"chapter": "NN_stem", "changes": [{"change": "one short sentence", "test": "tests/FILE.py::test_name"}]}

Every row names the test that shows it (``tests/inprocess/test_sdk_changes.py`` checks that each named test
exists). ``changes_table()`` reads every file present, in chapter order, for the appendix.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from course_lib.display import Table
from course_lib.errors import CourseError
from course_lib.paths import FIXTURES

FOLDER = FIXTURES / "sdk_changes"


@dataclass(frozen=True)
class Change:
    chapter: str  # "09_stateless_cache"
    change: str  # one short sentence
    test: str  # "tests/FILE.py::test_name"

    @property
    def number(self) -> str:
        return self.chapter[:2]


def _bad(path: Path, why: str) -> CourseError:
    return CourseError(f"{path.name}: {why}", reason="sdk_changes", path=str(path))


def load_file(path: Path) -> list[Change]:
    """The rows of one ``NN.json``; a file that breaks the format is a typed error naming it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise _bad(path, f"not JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("chapter"), str) or \
            not isinstance(data.get("changes"), list):
        raise _bad(path, 'expected {"chapter": "NN_stem", "changes": [...]}')
    chapter = data["chapter"]
    if chapter[:2] != path.stem:
        raise _bad(path, f"chapter {chapter!r} does not match the file name")
    rows = []
    for i, row in enumerate(data["changes"], 1):
        if not isinstance(row, dict) or set(row) != {"change", "test"} or \
                not all(isinstance(v, str) and v for v in row.values()):
            raise _bad(path, f"row {i} must be {{\"change\": str, \"test\": str}}")
        if not row["test"].startswith("tests/") or "::" not in row["test"]:
            raise _bad(path, f"row {i}: test {row['test']!r} is not tests/FILE.py::test_name")
        rows.append(Change(chapter, row["change"], row["test"]))
    return rows


def load(folder: Path = FOLDER) -> list[Change]:
    """Every row of every ``NN.json`` present, in chapter order, then file order."""
    return [row for path in sorted(folder.glob("[0-9][0-9].json")) for row in load_file(path)]


CHANGE_WIDTH = 94  # a table line's room for a change (100 characters wide, the chapter column first); longer ones wrap


def changes_table(folder: Path = FOLDER) -> Table:
    """Two rows per change: the chapter whose topic it touches and the change, then the test that shows it
    (a long change wraps inside its column)."""
    rows: list[list[str]] = []
    for c in load(folder):
        rows += [[c.number, c.change], ["", "→ " + c.test.removeprefix("tests/")]]
    return Table(["ch", "what changed, then the test under tests/ that shows it"], rows)
