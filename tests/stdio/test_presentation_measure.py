"""``make presentation``'s measured run time: a chapter's cells executed in a real kernel and timed
(the in-process checks of the tracks are in ``tests/inprocess/test_presentation.py``)."""
import nbformat

from course_lib.tooling import presentation_timings as timings


def test_measure_times_each_cell_in_a_real_kernel(tmp_path, monkeypatch):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import time"), nbformat.v4.new_code_cell("time.sleep(1.2)"),
                nbformat.v4.new_code_cell("x = 1")]
    sol = nbformat.v4.new_code_cell("time.sleep(1.2)")
    sol.metadata["tags"] = ["solution"]
    nb.cells.append(sol)
    path = tmp_path / "99_timed.ipynb"
    nbformat.write(nb, path)
    monkeypatch.setattr(timings, "SLOW_CELL", 1)
    run = timings.measure(path)
    assert run["slow_cells"] == [{"cell": 1, "seconds": 1}], "the solution cell is not on a slide: not counted"
    assert run["run_seconds"] in (0, 5)
