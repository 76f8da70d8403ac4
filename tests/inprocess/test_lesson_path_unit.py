"""The lesson on the student's path, the proof in the tests: no chapter before the appendix runs what
proves the course's own library (its negative controls, the envelope controls, the mutation tool, the
agreement of the cells with course_lib) or shows a "what changed between SDKs" section; the appendix
teaches the method once, and the one table of SDK changes lives there."""
import re

import nbformat
import pytest

from course_lib.paths import NOTEBOOKS

CHAPTERS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
APPENDIX = CHAPTERS[-1]
PROOF = re.compile(r"\b(negative_controls|envelope_controls|tooling\.mutants|tooling import mutants|sdk_changes)\b")
WHAT_CHANGED = re.compile(r"^#+ .*what changed", re.I | re.M)


@pytest.mark.parametrize("path", CHAPTERS[:-1], ids=lambda p: p.stem)
def test_a_chapter_before_the_appendix_runs_no_proof_of_the_library(path):
    nb = nbformat.read(path, as_version=4)
    code = [(i, c.source) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    assert [(i, m.group(1)) for i, source in code for m in PROOF.finditer(source)] == []
    headings = [c.source.splitlines()[0] for c in nb.cells if c.cell_type == "markdown" and WHAT_CHANGED.search(c.source)]
    assert headings == []


def test_the_appendix_teaches_the_method_once_and_holds_the_table_of_changes():
    nb = nbformat.read(APPENDIX, as_version=4)
    code = " ".join(c.source for c in nb.cells if c.cell_type == "code")
    for proof in ("negative_controls", "envelope_controls", "mutants", "sdk_changes"):
        assert proof in code, proof
