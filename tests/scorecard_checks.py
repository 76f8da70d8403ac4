"""What every grader test asks of a known-wrong solution's scorecard."""


def assert_flagged(card, failing: str, control: str, observed: str):
    """The wrong solution fails ``failing`` (observation starting with ``observed``, with a hint)
    and passes ``control`` (unless it is the same scenario); returns the failing verdict."""
    verdict = card.verdict_of(failing)
    assert not verdict.passed
    assert verdict.observed.startswith(observed), verdict.observed
    assert verdict.scenario.hint  # every failure comes with a hint
    if control != failing:
        assert card.verdict_of(control).passed, card.text()
    return verdict


def chapter_reference(notebook: str, names: tuple[str, ...], namespace: dict | None = None):
    """The first of ``names`` that the chapter's solution cells define, as they define it.

    The cells are run without their top-level ``await`` statements (the reference's own
    scorecard), so loading a reference never grades it.
    """
    import ast

    import nbformat

    from course_lib.paths import NOTEBOOKS
    from course_lib.tooling.student_copy import solution_sources

    namespace = dict(namespace or {})
    for source in solution_sources(nbformat.read(NOTEBOOKS / notebook, as_version=4)):
        tree = ast.parse(source)
        tree.body = [node for node in tree.body
                     if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Await))]
        exec(compile(tree, notebook, "exec"), namespace)
    return next(namespace[name] for name in names if name in namespace)
