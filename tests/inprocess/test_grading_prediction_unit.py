"""Chapter 07's prediction judge, in-process: the measured cells are the hand-written
``fixtures/peers/prediction.json``. The live runs are held to it by the chapter itself: its hidden
reference prediction is that fixture (below), and strict nbval holds the reference's full-marks
card, measured live, in the chapter's committed output."""
import ast
import copy
import json
import re
from importlib.metadata import version

import nbformat
import pytest

from course_lib import CatalogError
from course_lib.chapters import peers_lab
from course_lib.chapters.servers_env import SERVERS_ENV
from course_lib.grading import outcome as o
from course_lib.grading.battery import load_battery
from course_lib.grading.prediction import grade_prediction, judge_all
from course_lib.grading.scorecard import STARTER_HINT
from course_lib.paths import FIXTURES, NOTEBOOKS
from course_lib.tooling.student_copy import tags

pytestmark = pytest.mark.anyio
MEASURED = json.loads((FIXTURES / "peers" / "prediction.json").read_text())["cells"]
EXPECTED = json.loads((FIXTURES / "peers" / "expected.json").read_text())
_, SCENARIOS, SPEC = load_battery("prediction")


def card_of(prediction):
    return {(v.scenario.name, v.scenario.era): v for v in judge_all(SCENARIOS, o.returned(prediction), MEASURED)}


def with_cell(client, mode, cell):
    prediction = copy.deepcopy(MEASURED)
    prediction[client][mode] = cell
    return prediction


def reference_prediction() -> dict:
    """What the chapter's hidden reference ``reference_my_prediction()`` returns (its def alone)."""
    nb = nbformat.read(NOTEBOOKS / "07_real_software.ipynb", as_version=4)
    (cell,) = [c for c in nb.cells if "solution" in tags(c) and "reference_my_prediction" in c.source]
    (func,) = [n for n in ast.parse(cell.source).body if isinstance(n, ast.FunctionDef)]
    space: dict = {}
    exec(compile(ast.Module([func], []), "reference", "exec"), space)
    return space[func.name]()


def test_the_chapters_reference_is_the_fixture_at_the_pinned_versions():
    """The reference scores full marks live in the chapter's committed card: so the live cells are
    the fixture's, at these versions (an upgrade that changes a cell fails the chapter's nbval)."""
    assert reference_prediction() == MEASURED
    pinned = {**peers_lab.pins(), "fastmcp": SERVERS_ENV.pins()["fastmcp"], "mcp": version("mcp")}
    fixture = json.loads((FIXTURES / "peers" / "prediction.json").read_text())["versions"]
    assert fixture == {name: pinned[name] for name in fixture}


def test_the_battery_has_a_row_per_client_and_a_column_per_measured_mode():
    assert [(s.name, s.era) for s in SCENARIOS] == [(c, m) for c in MEASURED for m in ("large", "failing")]


def test_every_hint_names_a_heading_of_the_chapter():
    nb = nbformat.read(NOTEBOOKS / "07_real_software.ipynb", as_version=4)
    headings = {line.lstrip("#").strip() for c in nb.cells if c.cell_type == "markdown"
                for line in c.source.splitlines() if line.startswith("#")}
    for s in SCENARIOS:
        named = re.findall(r'"([^"]+)"', s.hints[s.era])
        assert named and all(n in headings or n.split(" ", 1)[-1] in headings for n in named), (s.name, s.era)


async def test_the_untouched_starter_scores_zero_and_starts_no_client():
    def my_prediction():
        raise NotImplementedError("your prediction here")

    card = await grade_prediction(my_prediction)
    assert card.score == 0 and len(card.verdicts) == 14
    assert {v.hint for v in card.verdicts} == {STARTER_HINT}


def test_the_measured_cells_as_a_prediction_pass_every_row():
    assert all(v.passed for v in card_of(MEASURED).values())


@pytest.mark.parametrize("client, mode, cell, failure, observed", [
    ("ts-sdk", "large", "alpha (1)", o.WRONG_RESULT, "listed other items"),
    ("ts-client", "large", "10 items (64)", o.MISSING_REFUSAL, "the client raised"),
    ("ts-sdk", "failing", "refused error (2)", o.WRONG_REFUSAL, "did not raise"),
    ("fastmcp", "failing", "refused -32603 (2)", o.WRONG_REFUSAL, "another reason or count"),
    ("course walk", "large", "page 1 only", o.WRONG_RESULT, "not a cell in the form"),
    ("mcp loop", "failing", None, o.WRONG_RESULT, "not a cell in the form"),
], ids=["wrong list", "missing refusal", "refusal where it listed", "wrong reason", "not a cell", "no cell"])
def test_each_wrong_prediction_fails_its_own_row_with_the_rows_hint(client, mode, cell, failure, observed):
    verdicts = card_of(with_cell(client, mode, cell))
    failed = [key for key, v in verdicts.items() if not v.passed]
    assert failed == [(client, mode)]
    v = verdicts[(client, mode)]
    assert v.failure_class == failure and observed in v.observed
    assert v.hint == v.scenario.hints[mode]
    assert str(MEASURED[client][mode]) not in v.observed  # the card never gives the answer


@pytest.mark.parametrize("value", [["alpha"], "10 items (1)", None])
def test_a_value_that_is_not_a_dict_fails_every_row(value):
    for measured in (None, MEASURED):  # whether or not the clients ran
        verdicts = judge_all(SCENARIOS, o.returned(value), measured)
        assert not any(v.passed for v in verdicts) and {v.failure_class for v in verdicts} == {o.WRONG_RESULT}


@pytest.mark.parametrize("outcome, failure", [
    (o.raised(ValueError("typo")), o.CRASH),              # the student's own bug
    (o.raised(CatalogError("cursor_repeated", "seen")), o.CRASH),  # a typed error is no answer either
    (o.hung(60.0), o.HANG)])
def test_a_function_that_gives_no_answer_fails_every_row_by_what_it_did(outcome, failure):
    verdicts = judge_all(SCENARIOS, outcome, None)
    assert not any(v.passed for v in verdicts) and {v.failure_class for v in verdicts} == {failure}


def test_a_client_that_did_not_finish_is_the_labs_failure_not_the_students():
    measured = copy.deepcopy(MEASURED)
    measured["inspector"]["large"] = "no answer in 60 s"
    (v,) = [v for v in judge_all(SCENARIOS, o.returned(MEASURED), measured) if not v.passed]
    assert (v.scenario.name, v.scenario.era, v.failure_class) == ("inspector", "large", o.LAB)


def table_cell(client: str, column: str) -> str:
    """A client's cell in one column of the chapter's stored tables (expected.json holds them)."""
    peers = {"ts-sdk": "@modelcontextprotocol/sdk@1.32.2", "ts-client": "@modelcontextprotocol/client@2.4.0",
             "inspector": "@modelcontextprotocol/inspector@2.12.0",
             "inspector-cli": "@modelcontextprotocol/inspector-cli@1.0.3", "course walk": "course walk"}
    if client == "fastmcp":
        return EXPECTED["fastmcp client"]["fastmcp@4.1.6"][column]
    if client == "mcp loop":
        return EXPECTED["python sdk"]["mcp@2.3.0"]["plain loop"][column]
    questions = EXPECTED["peers"][peers[client]]["legacy"]
    return next(q[column] for name, q in questions.items() if name != "era" and column in q)


COLUMNS = list(EXPECTED["fastmcp client"]["fastmcp@4.1.6"])


def test_no_prediction_copied_from_the_chapters_tables_passes():
    """No column of a visible table, nor the nearest pair (endless for large, change for
    failing), passes: each gets at most half the cells right."""
    for large, failing in [*((c, c) for c in COLUMNS), ("endless", "change")]:
        copied = {client: {"large": table_cell(client, large), "failing": table_cell(client, failing)}
                  for client in MEASURED}
        right = sum(v.passed for v in card_of(copied).values())
        assert right <= len(SCENARIOS) // 2, (large, failing, right)
