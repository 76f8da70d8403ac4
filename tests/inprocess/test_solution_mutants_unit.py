"""The mutants of a reference solution: each plausible mistake made once, each graded by the cell's own
check. A sample chapter, written here, whose check is a plain function: no server, the tool's logic."""
import asyncio
import json

import nbformat
import pytest

from course_lib.tooling import solution_mutants as M

SOLUTION = '''\
async def reference_my_refusal(code, name):
    if code == -32602 and isinstance(name, str):
        raise ValueError("refused")
    if name is None:
        return "unknown"
    return name


await check(reference_my_refusal)
'''

EARLIER = '''\
from types import SimpleNamespace


async def check(function):
    """Passes when every probe answers as the reference does (a probe per rule, but not every value)."""
    async def said(*args):
        try:
            return await function(*args)
        except ValueError:
            return "refused"
    probes = {(-32602, "a"): "refused", (-32603, "a"): "a", (-32602, 1): 1, (0, None): "unknown", (0, "ab"): "ab"}
    answers = {args: await said(*args) for args in probes}
    return SimpleNamespace(passed=answers == probes)
'''


def chapter(tmp_path):
    nb = nbformat.v4.new_notebook()
    solution = nbformat.v4.new_code_cell(SOLUTION)
    solution.metadata["tags"] = ["solution"]
    nb.cells = [nbformat.v4.new_code_cell(EARLIER), nbformat.v4.new_code_cell("await check(my_refusal)"), solution]
    path = tmp_path / "98_sample.ipynb"
    nbformat.write(nb, path)
    return path


def test_each_kind_of_mistake_is_made_once_in_the_reference_functions_only():
    found = sorted(M.without_line(m.description) for m in M.mutants(SOLUTION))
    assert found == sorted([
        "reference_my_refusal dropped condition: if code == -32602 and isinstance(name, str) -> never",
        "reference_my_refusal dropped clause: code == -32602 and isinstance(name, str) -> code == -32602",
        "reference_my_refusal dropped clause: code == -32602 and isinstance(name, str) -> isinstance(name, str)",
        "reference_my_refusal changed comparison: code == -32602 -> code != -32602",
        "reference_my_refusal prefix match for equality: code == -32602",
        "reference_my_refusal another refusal code: -32602 -> -32603",
        "reference_my_refusal truthiness for a type test: isinstance(name, str)",
        "reference_my_refusal missing branch: raise ValueError('refused') -> pass",
        "reference_my_refusal dropped condition: if name is None -> never",
        "reference_my_refusal changed comparison: name is None -> name is not None",
        "reference_my_refusal truthiness for a None test: name is None -> not name",
    ])
    for mutant in M.mutants(SOLUTION):
        assert mutant.source.rstrip().endswith("await check(reference_my_refusal)")  # the check is never mutated


def test_mutants_are_killed_listed_as_equivalent_or_reported_as_survivors(tmp_path):
    path = chapter(tmp_path)
    equivalent = {"98_sample:my_refusal": {
        "reference_my_refusal prefix match for equality: code == -32602": "str(-32602) is no prefix of another code here"}}
    said = []
    (tally,) = asyncio.run(M.run_chapter(path, equivalent, say=said.append))
    assert tally.errors == [] and len(said) == 11
    assert [M.without_line(d) for d in tally.equivalent] == [
        "reference_my_refusal prefix match for equality: code == -32602"]
    # no probe sends an empty name: that mistake survives, a missing probe the table names
    assert [M.without_line(d) for d in tally.survived] == [
        "reference_my_refusal truthiness for a None test: name is None -> not name"]
    assert len(tally.killed) == 9
    assert "98_sample:my_refusal  11       9       1           1          0" in M.table([tally])


def test_a_reference_that_fails_its_own_check_is_an_error_not_a_tally(tmp_path):
    path = chapter(tmp_path)
    nb = nbformat.read(path, as_version=4)
    nb.cells[2].source = nb.cells[2].source.replace('return "unknown"', 'return "unknown!"')
    nbformat.write(nb, path)
    (tally,) = asyncio.run(M.run_chapter(path, {}, say=lambda _: None))
    assert tally.errors == ["the reference itself does not pass its check"] and tally.killed == []


def test_a_killed_mutant_is_told_with_the_first_row_that_failed_it():
    from types import SimpleNamespace as NS
    row = lambda name, era, passed, observed: NS(scenario=NS(name=name, era=era), passed=passed, observed=observed)  # noqa: E731
    card = NS(passed=False, verdicts=[row("normal", "legacy", True, "returned ['a']"),
                                      row("non-object arguments", "2026-07-28", False, '"status" []: a result'),
                                      row("unknown tool", "legacy", False, '"" {}: a result')])
    assert M.killer(card) == 'non-object arguments (2026-07-28): "status" []: a result'
    assert M.killer(NS(passed=False)) is None  # a check whose card has no rows
