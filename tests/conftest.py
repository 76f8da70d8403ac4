import sys
from pathlib import Path

import pytest

# A file split across layers shares its helpers from one place: tests/stdio/F.py and tests/world/F.py
# import them from tests/inprocess/F_unit.py, whichever layer a run collects.
for _layer in ("inprocess", "stdio", "world"):
    if str(Path(__file__).parent / _layer) not in sys.path:
        sys.path.insert(0, str(Path(__file__).parent / _layer))


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(params=["legacy", "2026-07-28"])
def era(request):
    """Every protocol-level test runs in both eras."""
    return request.param


# tests/stdio/test_portable.py runs these chapters under strict nbval itself, with the temporary directory
# behind a symlink (as a Mac's is): when that test is in the run, their cells are not run again.
PORTABLE_RUN = "test_chapters_pass_with_the_temporary_directory_behind_a_symlink"
# The longest files, started first (pytest-xdist's ``--dist loadfile`` hands out whole files in
# this order, pyproject's ``--no-loadscope-reorder``): the workers then finish together.
# A hint for the order only; a file not listed keeps its place after them.
LONGEST_FIRST = ("notebooks/07_real_software.ipynb", "tests/stdio/test_schema_cache_facts.py",
                 "tests/world/test_instructor_view.py", "tests/world/test_classroom.py", "tests/stdio/test_audit.py",
                 "tests/stdio/test_portable.py", "tests/world/test_browser_check.py", "notebooks/08_stateless_wire.ipynb",
                 "notebooks/06_paginating_server.ipynb", "tests/stdio/test_sdk129_client.py",
                 "tests/stdio/test_troubleshooting.py", "notebooks/04_resources_and_uris.ipynb", "tests/world/test_peers.py",
                 "tests/world/test_real_servers.py", "tests/stdio/test_audit_http.py", "tests/stdio/test_audit_ci.py")


def _file(item, root: Path) -> str:
    path = Path(str(item.path))
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected what they deselect
def pytest_collection_modifyitems(config, items):
    runs = [item for item in items if getattr(item, "originalname", item.name) == PORTABLE_RUN]
    if runs:
        chapters = set(runs[0].module.CHAPTERS)
        again = [item for item in items if Path(str(item.path)).suffix == ".ipynb"
                 and Path(str(item.path)).name in chapters]
        if again:
            config.hook.pytest_deselected(items=again)
            items[:] = [item for item in items if item not in again]
    rank = {name: n for n, name in enumerate(LONGEST_FIRST)}
    order = {name: n for n, name in enumerate(dict.fromkeys(_file(item, config.rootpath) for item in items))}
    items.sort(key=lambda item: (rank.get(_file(item, config.rootpath), len(rank)),
                                 order[_file(item, config.rootpath)]))
