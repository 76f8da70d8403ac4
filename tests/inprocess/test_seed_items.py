"""Every item of the three source articles points at the chapter cell that executes it.

``fixtures/seed_items.json`` is written by hand: one entry per concrete scenario, failure
mode, rule, fixture, regression test, checklist entry or claim of an article, with the
chapter and the cell id that runs it, and a short ``evidence`` string (required) that the
cell's source or stored output must contain. An item the course deliberately does not run
carries a ``label`` that says why instead of a cell; an item nobody runs yet carries ``gap``
(the chapter it belongs in) and fails here until a cell takes it over. An item whose proof is about
the course's own library rather than the lesson lives in the test suite instead: it names ``test``
(``tests/FILE.py::test_name``) and its ``evidence`` is a string of that test function's source.

Only the committed notebooks are read; nbval re-executes them, so a stored output is the
output. The table of ``docs/source-articles.md`` is generated from the fixture (``make docs``,
``course_lib.tooling.docs``); the page is checked here and in ``tests/inprocess/test_docs.py``.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from course_lib.tooling import docs  # noqa: E402
from course_lib.tooling.regen import cell_text  # noqa: E402

FIXTURE = ROOT / "fixtures" / "seed_items.json"
NOTEBOOKS = ROOT / "notebooks"
PAGE = ROOT / "docs" / "source-articles.md"
ARTICLES = {"01", "02", "03"}
REQUIRED = ("id", "article", "section", "item")


def load_items() -> list[dict]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


ITEMS = load_items()
_notebooks: dict[str, object] = {}


def notebook(name: str):
    if name not in _notebooks:
        path = NOTEBOOKS / f"{name}.ipynb"
        _notebooks[name] = nbformat.read(path, as_version=4) if path.exists() else None
    return _notebooks[name]


def function_source(path: Path, name: str) -> str | None:
    """The source of the module-level test function ``name`` in ``path`` (None when there is none)."""
    import ast
    if not path.is_file() or not name.startswith("test"):
        return None
    text = path.read_text(encoding="utf-8")
    for node in ast.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return ast.get_source_segment(text, node)
    return None


def markdown_table(items: list[dict] | None = None) -> str:
    """The page's table: article | item | chapter cell (or why the course does not run it)."""
    return docs.seed_table(ITEMS if items is None else items)


def test_the_fixture_is_well_formed():
    assert isinstance(ITEMS, list) and ITEMS, "the fixture must be a non-empty list"
    ids = [x.get("id") for x in ITEMS]
    assert len(ids) == len(set(ids)), f"duplicate ids: {sorted({i for i in ids if ids.count(i) > 1})}"
    for x in ITEMS:
        for key in REQUIRED:
            assert isinstance(x.get(key), str) and x[key].strip(), f"{x.get('id')}: no {key}"
        assert x["article"] in ARTICLES, f"{x['id']}: unknown article {x['article']!r}"
        assert re.fullmatch(rf"a{x['article']}-\d\d", x["id"]), f"{x['id']}: id must be aNN-NN"
        if x.get("test") is not None:
            assert "cell" not in x and "notebook" not in x and "label" not in x, \
                f"{x['id']}: an item held by a test names no cell and no label"
            assert isinstance(x.get("evidence"), str) and x["evidence"].strip(), \
                f"{x['id']}: an item held by a test needs an evidence string"
        elif x.get("cell") is None:
            assert isinstance(x.get("label"), str) and x["label"].strip(), \
                f"{x['id']}: an item without a cell needs a label that says why"
            assert "notebook" not in x and "evidence" not in x, f"{x['id']}: label items name no cell"
        else:
            assert isinstance(x.get("notebook"), str) and x["notebook"], f"{x['id']}: no notebook"
            assert "label" not in x and "gap" not in x, f"{x['id']}: a mapped item has no label"
            assert isinstance(x.get("evidence"), str) and x["evidence"].strip(), \
                f"{x['id']}: a mapped item needs an evidence string"


@pytest.mark.parametrize("item", ITEMS, ids=[x["id"] for x in ITEMS])
def test_the_item_runs_in_its_cell(item):
    if item.get("gap"):
        pytest.fail(f"{item['id']} is run by no cell yet; it belongs in {item['gap']}: {item['item']}")
    if item.get("test") is not None:
        path, _, name = item["test"].partition("::")
        source = function_source(ROOT / path, name)
        assert source is not None, f"{item['id']}: {path} has no test function {name!r}"
        assert item["evidence"] in source, f"{item['id']}: {item['test']} does not contain {item['evidence']!r}"
        return
    if item.get("cell") is None:
        return  # deliberately not run; the label (checked above) says why
    nb = notebook(item["notebook"])
    assert nb is not None, f"{item['id']}: notebooks/{item['notebook']}.ipynb does not exist"
    cells = [c for c in nb.cells if c.get("id") == item["cell"]]
    assert cells, f"{item['id']}: {item['notebook']} has no cell with id {item['cell']!r}"
    (cell,) = cells
    where = f"{item['id']}: {item['notebook']} cell {item['cell']}"
    assert cell.cell_type == "code", f"{where} is a {cell.cell_type} cell, not a code cell"
    assert cell.get("execution_count") is not None, f"{where} was never executed"
    errors = [o for o in cell.outputs if o.get("output_type") == "error"]
    assert not errors, f"{where} stored an error: {errors[0].get('ename')}"
    # A cell that only defines the code (a walker, a server) may have no output; then the
    # evidence must be in its source, which this check reads either way.
    assert isinstance(item.get("evidence"), str) and item["evidence"], f"{where}: no evidence"
    assert item["evidence"] in cell.source or item["evidence"] in cell_text(cell), \
        f"{where}: neither its source nor its output contains {item['evidence']!r}"


def test_the_page_shows_the_fixtures_table():
    text = PAGE.read_text(encoding="utf-8")
    table = markdown_table()
    assert text.count(table) == 1, "docs/source-articles.md differs from the fixture: run `make docs`"
    assert text.count("\n| ") == len(ITEMS) + 1, "the page holds one table (a header and a row an item)"


def test_the_table_names_every_item_once():
    lines = markdown_table().splitlines()[2:]
    assert len(lines) == len(ITEMS)
    for line, x in zip(lines, ITEMS):
        assert line.startswith(f"| {x['article']} | ") and (x.get("cell") or x.get("test") or "not") in line


if __name__ == "__main__":
    print(markdown_table())  # what `make docs` writes into docs/source-articles.md
