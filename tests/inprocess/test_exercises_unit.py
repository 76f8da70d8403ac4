"""In-process: the checks of tests/stdio/test_exercises.py's subject that start no process."""
import ast
import re

import nbformat
import pytest
from course_lib.paths import NOTEBOOKS
from course_lib.tooling.regen import cell_text as text_of
from course_lib.tooling.student_copy import tags

# chapter: (the student's function, the grader its check cell calls), or a list of such pairs when
# a chapter has more than one exercise (each in the order task, starter, check, solution)
EXERCISES = {
    "01_pagination": ("my_walk", "grade_walker"),
    "02_cursor_failures": ("my_restarting_walk", "grade_walker"),
    "06_paginating_server": ("my_page", "grade_paging_server"),
    "07_real_software": ("my_prediction", "grade_prediction"),
    "03_schema_cache": [("my_tool_result", "grade_tool_result"), ("my_retrying_candidate", "grade_candidate")],
    "04_resources_and_uris": ("my_read_resource", "grade_read_handler"),
    "05_snapshot_bundles": [("my_acquire", "grade_bundles"), ("my_read", "grade_snapshot_server")],
    "08_stateless_wire": [("my_call_tool", "grade_checked_tools"), ("my_check_reply", "grade_envelope")],
    "09_stateless_cache": ("my_sealer", "grade_sealed_state"),
    "10_capstone": ("MyClient", "grade_capstone"),
}


PAIRS = [(stem, *pair) for stem, entry in EXERCISES.items()
         for pair in (entry if isinstance(entry, list) else [entry])]
IDS = [f"{stem}:{name}" for stem, name, _ in PAIRS]


def load(stem):
    return nbformat.read(NOTEBOOKS / f"{stem}.ipynb", as_version=4)


def the_cell(nb, tag, name=None):
    """The code cell tagged ``tag``; in a chapter of several exercises, the one of ``name``."""
    found = [i for i, c in enumerate(nb.cells) if tag in tags(c) and c.cell_type == "code"]
    if name is not None and len(found) > 1:
        mine = {"exercise": lambda source: name in top_level_names(source),
                "check": lambda source: re.search(rf"\(\s*{name}\b", source),
                "solution": lambda source: f"reference_{name}" in source}[tag]
        found = [i for i in found if mine(nb.cells[i].source)]
    (index,) = found
    return index, nb.cells[index]


def top_level_names(source: str) -> set[str]:
    """Names a cell binds at the top level (functions, classes, assignments, imports)."""
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("stem, name, grader", PAIRS, ids=IDS)
def test_the_exercise_follows_the_convention(stem, name, grader):
    reference = f"reference_{name}"
    nb = load(stem)
    ex, starter = the_cell(nb, "exercise", name)
    chk, check = the_cell(nb, "check", name)
    sol, solution = the_cell(nb, "solution", name)
    task = max(i for i in range(ex) if nb.cells[i].source.startswith("## Exercise"))
    assert task < ex < chk < sol, "task, starter, check, solution"
    assert all(nb.cells[i].cell_type == "markdown" or "Time budget" in nb.cells[i].source
               or not top_level_names(nb.cells[i].source)  # a display of the battery, say
               for i in range(task + 1, sol) if i not in (ex, chk)), "nothing else runs between them"
    assert all("solution" in tags(c) for c in nb.cells[chk + 1:sol]), "what introduces the solution goes with it"

    # the battery's time budget is printed (before the starter, or in the card's header), never typed
    assert not re.search(r"\b\d+ ?(s|seconds?)\b", nb.cells[task].source)
    shown = [text_of(c) for c in nb.cells[task:ex] if c.cell_type == "code"] + [text_of(check)]
    assert any(re.search(r"(Time budget: \d+ s|stopped after \d+ s)", text) for text in shown)

    # the starter defines the student's function and only raises
    assert top_level_names(starter.source) == {name}
    assert "raise NotImplementedError" in starter.source

    # the check grades the student's function; its stored card is the starter's, failing
    assert re.search(rf"await {grader}\({name}\b", check.source)
    card = words(text_of(check))
    assert "NotImplemen" in card and "well done" not in card  # the starter's error, wrapped in its column

    # the solution: hidden, its own names only, ends by grading the reference (which passes)
    assert solution.metadata["jupyter"]["source_hidden"] is True
    defined = top_level_names(solution.source)
    assert reference in defined
    assert not defined & top_level_names(starter.source)
    imported = {alias.asname or alias.name.split(".")[0] for node in ast.parse(solution.source).body
                if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}
    assert all(n.lower().startswith("reference_") or n in imported for n in defined), defined
    last = ast.parse(solution.source).body[-1]
    assert isinstance(last, ast.Expr) and isinstance(last.value, ast.Await)
    assert ast.unparse(last.value).startswith(f"await {grader}({reference}")
    assert "well done" in text_of(solution)


@pytest.mark.parametrize("stem, name, grader", PAIRS, ids=IDS)
def test_the_checks_stored_card_is_the_starters_zero(stem, name, grader):
    _, check = the_cell(load(stem), "check", name)
    assert re.search(r"\b0/\d+ scenarios pass$", words(text_of(check)))


# The untouched starter's card, as the chapter stores it (strict nbval re-runs the check cell and holds
# the stored card to the real run): every row fails, the first with the starter's own error and the
# starter's hint, every later one as "the same way as in 1". Rows and error written from the batteries
# and the starters, not from the cards.
STARTER_CARDS = {
    ("03_schema_cache", "my_retrying_candidate"): (5, 5, "NotImplementedError: your candidate here"),
    ("04_resources_and_uris", "my_read_resource"): (10, 20, "NotImplementedError: write your read handler here"),
    ("08_stateless_wire", "my_check_reply"): (14, 14, "NotImplementedError"),
}


@pytest.mark.parametrize("stem, name", list(STARTER_CARDS), ids=[f"{s}:{n}" for s, n in STARTER_CARDS])
def test_the_stored_starter_card_fails_every_row_with_the_starters_error(stem, name):
    rows, verdicts, error = STARTER_CARDS[(stem, name)]
    _, check = the_cell(load(stem), "check", name)
    text = text_of(check)
    table = text.split("\n\n")[0].splitlines()
    lines = table[table.index(next(ln for ln in table if ln.startswith("---"))) + 1:]
    assert len(lines) == rows and all(ln.endswith("FAIL") and "PASS" not in ln.split() for ln in lines), table
    items = re.split(r"\n(?=\d+\. )", text.split("What failed", 1)[1])[1:]
    assert len(items) == rows, items
    assert f"observed your code crashed: {error}" in words(items[0]), items[0]
    assert "This is still the starter" in words(items[0])
    assert all("crashed the same way as in 1" in words(item) for item in items[1:]), items
    assert words(text).endswith(f"0/{verdicts} scenarios pass")
