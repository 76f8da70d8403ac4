"""One lifecycle for every process a lab starts: ``_runtime.process.started_server``.

A scan of ``course_lib/``: a call that starts a process (``subprocess``, ``anyio``'s and asyncio's
process calls, ``os.fork``, or ``launch`` itself) appears only in the files listed here, each with
the reason it is not a lab's process. Everything else goes through ``started_server``, which
stops the process, its group and what escaped it however the block ends.
"""
import ast

from course_lib.paths import PACKAGE

STARTS = {"Popen", "run", "run_process", "open_process", "create_subprocess_exec", "create_subprocess_shell",
          "fork", "launch", "spawn"}
ALLOWED = {
    "_runtime/process.py": "the launcher itself (spawn, launch, started_server)",
    "_runtime/fastlaunch.py": "the fork server",
    "_runtime/forkserver.py": "the forks the fork server makes",
    "servers/hostile.py": "the hostile server's helper, which must escape its lab on purpose",
    "chapters/peer_tap.py": "a standard-library relay inside a peer run's process group",
    "chapters/peers_env.py": "npm ci and node --version (set-up): subprocess.run only",
    "chapters/course_copy.py": "a probe in a copy of the course, like regen: subprocess.run only",
    "sdk129.py": "building .venv-sdk129 (set-up): subprocess.run only",
    "chapters/servers_env.py": "building .venv-servers (set-up) and reading its versions: subprocess.run only",
    "chapters/real_servers.py": "git making the lab's throwaway repository: subprocess.run only",
    "tooling/bench.py": "tooling", "tooling/regen.py": "tooling", "tooling/browser_check.py": "tooling",
    "tooling/bench_trees.py": "tooling (a git revision's tree, timed beside this one)",
    "tooling/mutants.py": "tooling (pytest on a mutated copy of the package)",
    "tooling/lab_server.py": "tooling (JupyterLab for the browser check)",
    "tooling/slides_check.py": "tooling (Chromium, through Playwright)",
    "tooling/classroom_accounts.py": "the class's accounts (useradd, userdel): subprocess.run only",
    "tooling/classroom_hub.py": "tooling (the hub under its supervisor)",
    "tooling/classroom_install.py": "building .venv-classroom (set-up): subprocess.run only",
    "tooling/pinned_install.py": "uv installing the pins into a venv (set-up): subprocess.run only",
    "tooling/classroom_bench.py": "tooling (one hub per class size for the capacity bench)",
}


def starts(path) -> list[tuple[int, str]]:
    """(line, call) of each call in ``path`` that starts a process."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else None
            if name in STARTS and (owner in (None, "os", "subprocess", "anyio", "asyncio", "fastlaunch")
                                   or name in ("open_process", "create_subprocess_exec")):
                if name == "run" and owner != "subprocess":
                    continue  # anyio.run / asyncio.run run a coroutine, not a process
                found.append((node.lineno, name))
    return sorted(found)


def test_only_the_listed_files_start_processes():
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        calls = starts(path)
        if rel in ALLOWED and ALLOWED[rel].endswith("subprocess.run only"):
            calls = [(line, name) for line, name in calls if name != "run"]
        elif rel in ALLOWED:
            calls = []
        if calls:
            offenders[rel] = calls
    assert offenders == {}, "start these through _runtime.process.started_server"


def test_the_scan_sees_a_process_start(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import anyio, subprocess\nasync def f():\n    await anyio.open_process(['x'])\n"
                      "subprocess.Popen(['y'])\nanyio.run(f)\n", encoding="utf-8")
    assert starts(sample) == [(3, "open_process"), (4, "Popen")]
