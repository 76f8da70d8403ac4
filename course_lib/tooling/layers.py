"""The suite's layers, given by where a test file sits (no test file carries a marker).

``tests/inprocess/``: no server, no process, no kernel, nothing but this interpreter: the fast
layer (``pytest -m inprocess``, ``make check``). ``tests/stdio/``: the course's servers over real
stdio, kernels, child interpreters (the SDK 1.29.0 peer included). ``tests/world/``: real outside
software: chapter 07's peers and real servers, JupyterLab, Chromium, the classroom's hub.
``notebook``: every nbval cell of a chapter (``notebooks/``).

A test file (``test_*.py``) anywhere else fails, each of its tests naming the directories to
move it to (and it is selected by every ``-m`` layer, so ``make check`` shows it too). The
helpers the tests import (``tests/conftest.py``, ``tests/memory_server.py`` ...) stay at the top.

The in-process layer holds to its name: while one of its tests (and its fixtures) runs, an audit
hook refuses a started process (``subprocess.Popen``, ``os.fork``, ``os.posix_spawn``,
``os.system``, ``os.exec*``) or a fork request to the fast launcher's fork server
(``socket.sendmsg``): the call raises, and the test fails naming it.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

LAYERS = {
    "inprocess": "no server and no process: the fast layer (make check), tests/inprocess/",
    "stdio": "the course's servers over real stdio, kernels, child interpreters: tests/stdio/",
    "world": "real outside software (peers, real servers, JupyterLab, Chromium, the hub): tests/world/",
    "notebook": "a chapter's cell under strict nbval (notebooks/)",
}
DIRECTORIES = ("inprocess", "stdio", "world")
STARTS_A_PROCESS = frozenset({"subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn",
                              "os.system", "os.exec", "socket.sendmsg"})
MISPLACED = "misplaced"


def is_test_file(path: Path) -> bool:
    return path.suffix == ".py" and (path.name.startswith("test_") or path.stem.endswith("_test"))


def layer(item: pytest.Item) -> str | None:
    """The item's layer, from its file's directory; None outside the layers (a file named on the
    command line that is no test file, as the mutation tool's sample checks, is in no layer)."""
    path = Path(str(item.path))
    if path.suffix == ".ipynb":
        return "notebook"
    if path.parent.name in DIRECTORIES and path.parent.parent.name == "tests":
        return path.parent.name
    return None


def misplaced(item: pytest.Item, root: Path) -> str:
    path = Path(str(item.path))
    try:
        shown = path.relative_to(root).as_posix()
    except ValueError:
        shown = path.as_posix()
    return (f"{shown} sits outside a layer directory: move it to tests/inprocess|stdio|world "
            f"(course_lib/tooling/layers.py says which)")


def mark(items: list[pytest.Item]) -> None:
    for item in items:
        name = layer(item)
        if name is None and not is_test_file(Path(str(item.path))):
            continue
        if name is None:  # every layer's selection shows it, and its set-up fails
            for every in LAYERS:
                item.add_marker(every)
            item.add_marker(MISPLACED)
        else:
            item.add_marker(name)


_watching: dict[str, str | None] = {"test": None, "started": None}
_hooked = False


def _audit(event: str, args: tuple) -> None:
    if _watching["test"] is not None and event in STARTS_A_PROCESS:
        if _watching["started"] is None:
            _watching["started"] = event
        raise RuntimeError(f"an inprocess test started a process ({event})")


def watch(item: pytest.Item, root: Path) -> None:
    """Start watching an in-process test (from its set-up on); other tests are not watched."""
    global _hooked
    _watching.update(test=None, started=None)
    if item.get_closest_marker(MISPLACED) is not None:
        pytest.fail(misplaced(item, root), pytrace=False)
    if item.get_closest_marker("inprocess") is None:
        return
    if not _hooked:
        sys.addaudithook(_audit)  # cannot be removed; it does nothing while no test is watched
        _hooked = True
    _watching["test"] = item.nodeid


def judge(item: pytest.Item) -> None:
    """Fail an in-process test that started (or tried to start) a process."""
    started, watched = _watching["started"], _watching["test"]
    _watching.update(test=None, started=None)
    if started is not None and watched == item.nodeid:
        pytest.fail(f"an inprocess test started a process ({started}): move it to tests/stdio "
                    "(or tests/world), or keep it in process", pytrace=False)
