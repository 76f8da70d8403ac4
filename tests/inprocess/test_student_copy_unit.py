"""In-process: the checks of tests/stdio/test_student_copy.py's subject that start no process."""

import nbformat

from course_lib.paths import NOTEBOOKS
from course_lib.tooling.student_copy import REVEAL, SOLUTION, dropped, generate, main, solution_sources, tags

CHAPTERS = sorted(NOTEBOOKS.glob("*.ipynb"))


def words(text: str) -> str:
    return " ".join(text.split())


def strings(node):
    """Every string in a notebook (sources, outputs, metadata), unescaped."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from strings(value)


def card_of(cell) -> str:
    return words("".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in cell.outputs))


def test_the_copy_has_no_solution_and_keeps_every_other_cell_as_it_is(tmp_path):
    written, kept = generate(tmp_path / "student")
    assert kept == []
    assert sorted(p.name for p in written) == sorted(p.name for p in CHAPTERS + sorted(NOTEBOOKS.glob("*.md")))
    solutions = 0
    for original in CHAPTERS:
        copy = tmp_path / "student" / original.name
        source_nb = nbformat.read(original, as_version=4)
        student_nb = nbformat.read(copy, as_version=4)
        nbformat.validate(student_nb)
        text = copy.read_text()
        content = "\n".join(strings(student_nb))
        assert not any(SOLUTION in tags(c) for c in student_nb.cells)
        others = "\n".join(c.source for c in source_nb.cells if SOLUTION not in tags(c))
        for solution in solution_sources(source_nb):
            solutions += 1
            assert solution not in text
            # no line of the solution that the rest of the chapter does not also have
            own = {line.strip() for line in solution.splitlines() if line.strip() and line.strip() not in others}
            leaked = [line for line in own if line in content]
            assert not leaked, leaked
            assert "reference_" not in content
        kept_cells = [c for c in source_nb.cells if not dropped(c)]  # solutions and self-check answers
        assert [c.id for c in student_nb.cells] == [c.id for c in kept_cells]
        # every other cell unchanged: the demonstrations keep their outputs, the checks their scorecards;
        # a self-check's reveal cell keeps its code without outputs (predict, click, then run it)
        assert [(c.source, c.get("outputs")) for c in student_nb.cells] == \
               [(c.source, [] if REVEAL in tags(c) and c.cell_type == "code" else c.get("outputs"))
                for c in kept_cells]
        follows_the_convention = any("reference_" in s for s in solution_sources(source_nb))
        for cell in student_nb.cells:
            if "check" in tags(cell) and follows_the_convention:
                card = card_of(cell)
                assert "scenarios pass" in card and "well done" not in card, original.name
    assert solutions >= 5


def test_the_copy_never_overwrites_a_students_work(tmp_path, capsys):
    out = tmp_path / "student"
    generate(out)
    mine = out / "01_pagination.ipynb"
    nb = nbformat.read(mine, as_version=4)
    (starter,) = [c for c in nb.cells if "exercise" in tags(c)]
    starter.source = "async def my_walk(session):\n    return ['my', 'own', 'work']\n"
    nbformat.write(nb, mine)
    before = mine.read_bytes()
    (out / "02_cursor_failures.ipynb").unlink()
    (out / "TROUBLESHOOTING.md").write_text("my notes\n")

    written, kept = generate(out)
    assert written == [out / "02_cursor_failures.ipynb"], "only the missing file is written"
    assert mine in kept and mine.read_bytes() == before
    assert (out / "TROUBLESHOOTING.md").read_text() == "my notes\n"

    assert main([str(out)]) == 0  # what `make student` and `make lab` run: nothing to write now
    assert mine.read_bytes() == before
    assert "wrote" not in capsys.readouterr().out
