"""A judge with two checks, for the mutation tool's own tests (``tests/inprocess/test_mutants_unit.py``): the
checks of ``tests/mutants_sample_checks.py`` hold the first and leave the second unheld, so of its
three mutants exactly one survives."""


def judge_answer(expect: dict, value) -> tuple[bool, str]:
    if not isinstance(value, list):
        return False, "not a list"
    if len(value) > 100:  # no check holds this one: its mutant survives
        return False, "too long"
    return value == expect["names"], f"returned {value}"
