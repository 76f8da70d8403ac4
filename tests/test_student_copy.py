"""The generated student copy: no solution leaks, exercise outputs cleared, notebooks still run."""
import nbformat
from nbclient import NotebookClient

from course_lib.paths import NOTEBOOKS
from course_lib.tooling.student_copy import SOLUTION, generate, solution_sources, tags


def test_student_copy_has_no_solutions_and_clears_exercises(tmp_path):
    written = generate(tmp_path / "student")
    chapters = sorted(NOTEBOOKS.glob("*.ipynb"))
    assert [p.name for p in written] == [p.name for p in chapters]
    solutions = 0
    for original, copy in zip(chapters, written):
        source_nb = nbformat.read(original, as_version=4)
        student_nb = nbformat.read(copy, as_version=4)
        nbformat.validate(student_nb)
        text = copy.read_text()
        for solution in solution_sources(source_nb):
            solutions += 1
            body = [line for line in solution.splitlines() if line.strip() and not line.lstrip().startswith("#")]
            # the solution's distinctive lines must not appear anywhere in the student copy
            leaked = [line for line in body if line.strip() not in ("return names",) and line in text
                      and not any(line in c.source for c in student_nb.cells)]
            assert not any(SOLUTION in tags(c) for c in student_nb.cells)
            assert not leaked, leaked
            assert solution not in text
        for cell in student_nb.cells:
            if {"exercise", "check"} & set(tags(cell)):
                assert cell.outputs == []
        kept = [c for c in source_nb.cells if SOLUTION not in tags(c)]
        assert len(student_nb.cells) == len(kept)
    assert solutions >= 2


def test_student_chapter_runs_through_its_exercise(tmp_path):
    (copy,) = [p for p in generate(tmp_path / "student") if p.name.startswith("01_")]
    nb = nbformat.read(copy, as_version=4)
    NotebookClient(nb, kernel_name="python3", timeout=300,
                   resources={"metadata": {"path": str(copy.parent)}}).execute()
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert errors == []
    (check,) = [c for c in nb.cells if "check" in c.metadata.get("tags", [])]
    card = " ".join("".join(o.get("data", {}).get("text/plain", "") for o in check.outputs).split())
    assert "NotImplementedError:" in card  # the starter's own error, wrapped in its column
    assert "0/8 scenarios pass" in card
