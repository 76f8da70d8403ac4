"""Notebook housekeeping: deterministic regeneration of the committed outputs.

``python -m course_lib.tooling.regen regen notebooks/01_pagination.ipynb ...`` executes each
notebook top to bottom in a fresh kernel, with cell metadata reduced to what the course
uses (tags, slides, hidden sources) and no timestamps or widget state, so that running it
twice gives byte-identical files.
"""
from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

KEEP_CELL_METADATA = ("tags", "slideshow", "jupyter")
KEEP_NOTEBOOK_METADATA = ("kernelspec", "language_info")
CELL_TIMEOUT = 300


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def normalise(nb) -> None:
    """Keep only the metadata the course relies on; derive the slide metadata; one stream
    output per name and run.

    A stored widget view names a random model id that no saved notebook can resolve, so only
    its text form is kept (the widget appears when the cell runs). The kernel may split one
    cell's printing into chunks differently from run to run; nbval compares the joined text
    anyway, so joining adjacent chunks here keeps files byte-stable.
    """
    from course_lib.tooling.slides import annotate

    nb.metadata = {k: v for k, v in nb.metadata.items() if k in KEEP_NOTEBOOK_METADATA}
    for cell in nb.cells:
        cell.metadata = {k: v for k, v in cell.metadata.items() if k in KEEP_CELL_METADATA}
        outputs = []
        for output in cell.get("outputs", []):
            if WIDGET_VIEW in output.get("data", {}):
                del output["data"][WIDGET_VIEW]
            previous = outputs[-1] if outputs else None
            if (output.get("output_type") == "stream" and previous is not None
                    and previous.get("output_type") == "stream" and previous.get("name") == output.get("name")):
                previous["text"] += output["text"]
            else:
                outputs.append(output)
        if "outputs" in cell:
            cell.outputs = outputs
    annotate(nb)


def stored_text(path: Path, source_contains: str) -> str:
    """The committed text outputs of the one code cell whose source contains ``source_contains``.

    nbval re-executes every chapter and fails on any difference, so a test may read a verdict
    from the stored outputs instead of computing it a second time.
    """
    import nbformat

    nb = nbformat.read(path, as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code" and source_contains in c.source]
    if len(cells) != 1:
        raise ValueError(f"{len(cells)} cells of {path.name} contain {source_contains!r}, expected 1")
    return cell_text(cells[0])


def cell_text(cell) -> str:
    """A code cell's stored text outputs, joined: its streams and the ``text/plain`` of its results."""
    return "".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in cell.outputs)


def stored_rows(path: Path, source_contains: str) -> list[dict[str, str]]:
    """The rows of the ``display.Table`` that cell stored, as ``{column: text}`` (a title line is skipped).

    A line whose first column is blank continues the row above (a long cell wrapped inside its
    column; its parts are joined with a space), and a ``(note N)`` cell is replaced by note N
    from under the table. The table ends at its first blank line.
    """
    lines = stored_text(path, source_contains).rstrip("\n").splitlines()
    rule = next(i for i, line in enumerate(lines) if line and set(line) <= {"-", " "})
    end = next((i for i in range(rule + 1, len(lines)) if not lines[i].strip()), len(lines))
    notes: dict[str, str] = {}
    for line in lines[end + 1:]:
        if line.startswith("note ") and ": " in line:
            key, _, text = line.partition(": ")
            notes[f"({key})"] = text
            last = key
        elif line.startswith("  ") and notes:
            notes[f"({last})"] += " " + line.strip()
    spans, start = [], 0
    for dashes in lines[rule].split("  "):
        if dashes:
            spans.append((start, start + len(dashes)))
        start += len(dashes) + 2
    header = lines[rule - 1]
    names = [header[a:b].strip() for a, b in spans]
    rows: list[dict[str, str]] = []
    for line in lines[rule + 1:end]:
        cells = [line[a:b + 1].strip() if i + 1 < len(spans) else line[a:].strip()
                 for i, (a, b) in enumerate(spans)]
        if rows and not cells[0]:
            for n, v in zip(names, cells):
                if v:
                    rows[-1][n] = f"{rows[-1][n]} {v}".strip()
        else:
            rows.append(dict(zip(names, cells)))
    return [{n: notes.get(v, v) for n, v in row.items()} for row in rows]


def execute(path: Path) -> None:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    normalise(nb)
    client = NotebookClient(nb, kernel_name="python3", timeout=CELL_TIMEOUT, record_timing=False,
                            store_widget_state=False, resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    normalise(nb)
    nbformat.write(nb, path)


def _run_one(path: Path) -> tuple[Path, int, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    proc = subprocess.run([sys.executable, "-m", "course_lib.tooling.regen", "execute", str(path)],
                          env=env, capture_output=True, text=True)
    return path, proc.returncode, proc.stderr


def regen(paths: list[Path], jobs: int = 2) -> int:
    failed = 0
    with ThreadPoolExecutor(jobs) as pool:
        for path, code, err in pool.map(_run_one, paths):
            print(f"{'ok    ' if code == 0 else 'FAILED'} {path}", flush=True)
            if code:
                failed += 1
                print(err[-4000:], file=sys.stderr)
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "execute":
        execute(Path(argv[1]))
        return 0
    if argv and argv[0] == "regen":
        return regen([Path(p) for p in argv[1:]])
    print("usage: python -m course_lib.tooling.regen regen NOTEBOOK...", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
