"""The walkers chapters 01 and 02 write in cells, next to the library's ``course_lib.walk``.

Chapter 01 writes ``walk_bounded`` (the only end is ``next_cursor is None``, a page and an item
budget); chapter 02 grows it into ``walk_refusing`` (repeated cursors, cycles, duplicate names).
Later chapters call ``course_lib.walk`` instead, on the promise that it keeps the same rules. Each
walker is taken from the committed chapter (its defining cell, by id) and run on real catalog
servers in both eras, against the hand-written expectations of ``fixtures/grading/walk.json`` (the
exercise battery: names, refusal, exact number of ``tools/list`` requests) and
``fixtures/walkers/budgets.json`` (the budgets): never against one another's answers.
"""
from __future__ import annotations

import ast
import json

import nbformat
import pytest
from mcp import MCPError, types

from course_lib import CatalogError, connect, walk
from course_lib.paths import FIXTURES, NOTEBOOKS

pytestmark = pytest.mark.anyio

BATTERY = {row["name"]: row for row in json.loads((FIXTURES / "grading" / "walk.json").read_text())["scenarios"]}
BUDGETS = json.loads((FIXTURES / "walkers" / "budgets.json").read_text())["rows"]


def cell_function(chapter: str, cell_id: str, name: str):
    """The function ``name`` as the chapter's cell ``cell_id`` defines it (its other statements are not run)."""
    nb = nbformat.read(NOTEBOOKS / f"{chapter}.ipynb", as_version=4)
    (cell,) = [c for c in nb.cells if c.get("id") == cell_id]
    tree = ast.parse(cell.source)
    tree.body = [node for node in tree.body if isinstance(node, ast.AsyncFunctionDef) and node.name == name]
    assert tree.body, f"{chapter} cell {cell_id} defines no {name}"
    namespace = {"types": types, "CatalogError": CatalogError,
                 "page_params": lambda c: None if c is None else types.PaginatedRequestParams(cursor=c)}
    exec(compile(tree, f"<{chapter} {cell_id}>", "exec"), namespace)
    return namespace[name]


WALK_BOUNDED = cell_function("01_pagination", "seed-walker-grown", "walk_bounded")
WALK_REFUSING = cell_function("02_cursor_failures", "seed-walker-refuses", "walk_refusing")


async def library(session, **limits):
    catalog = await walk(session, **limits)
    return list(catalog.items), list(catalog.page_sizes)


WALKERS = {"walk_bounded (chapter 01)": WALK_BOUNDED, "walk_refusing (chapter 02)": WALK_REFUSING,
           "course_lib.walk": library}


async def run(walker, mode: str, era: str, **limits):
    """What the walker returned (the names) or refused (type, reason or code), and the requests it sent."""
    async with connect("catalog", mode=mode, era=era) as lab:
        try:
            tools, _ = await walker(lab.session, **limits)
            outcome = {"names": [tool.name for tool in tools]}
        except CatalogError as exc:
            outcome = {"refusal": {"type": "CatalogError", "reason": exc.reason}}
        except MCPError as exc:
            outcome = {"refusal": {"type": "MCPError", "code": exc.error.code}}
    return outcome, len(lab.wire.requests("tools/list"))


def expected(row: dict) -> dict:
    return {"refusal": row["refusal"]} if row.get("raises") else {"names": row["names"]}


@pytest.mark.parametrize("walker", WALKERS, ids=list(WALKERS))
async def test_the_walkers_written_in_cells_return_every_complete_catalog(walker, era):
    for name in ("normal", "single page", "empty catalog", "empty-string cursor", "server order"):
        row = BATTERY[name]
        outcome, requests = await run(WALKERS[walker], row["mode"], era)
        assert (outcome, requests) == (expected(row["expect"]), row["expect"]["requests"]), name


@pytest.mark.parametrize("walker", ["walk_refusing (chapter 02)", "course_lib.walk"])
async def test_the_walker_written_in_cells_refuses_like_the_library(walker, era):
    for name in ("repeated cursor", "cursor cycle", "endless catalog", "duplicate name", "catalog changed"):
        row = BATTERY[name]
        if era not in row.get("eras", [era]):
            continue
        outcome, requests = await run(WALKERS[walker], row["mode"], era)
        assert (outcome, requests) == (expected(row["expect"]), row["expect"]["requests"]), name


@pytest.mark.parametrize("walker", WALKERS, ids=list(WALKERS))
async def test_every_walker_keeps_its_budgets(walker, era):
    for row in BUDGETS:
        outcome, requests = await run(WALKERS[walker], row["mode"], era, **row["limits"])
        want = {"refusal": {"type": "CatalogError", "reason": row["refusal"]}} if "refusal" in row \
            else {"names": row["names"]}
        assert (outcome, requests) == (want, row["requests"]), row


async def test_chapter_01s_walker_ends_an_endless_catalog_at_its_page_budget(era):
    row = BATTERY["endless catalog"]
    outcome, requests = await run(WALK_BOUNDED, row["mode"], era)
    assert (outcome, requests) == (expected(row["expect"]), row["expect"]["requests"])
