"""In-process: the checks of tests/stdio/test_portable.py's subject that start no process."""
import ast
import os
import re
from course_lib.paths import ROOT


# Linux-only mechanisms, as they would be written in the package's source.
LINUX_ONLY = {
    "/proc": re.compile(r"/proc\b"),
    "prctl": re.compile(r"\bprctl\b"),
    "pidfd": re.compile(r"\bpidfd_"),
    "SO_PEERCRED": re.compile(r"\bSO_PEERCRED\b"),
    "abstract socket name": re.compile(r"""["']\\0"""),
    "epoll / inotify": re.compile(r"\b(epoll|inotify)\b"),
    "/dev/shm": re.compile(r"/dev/shm\b"),
    "sched affinity": re.compile(r"\bsched_(get|set)affinity\b"),
}


def linux_only(source: str) -> list[str]:
    return [name for name, pattern in LINUX_ONLY.items() if pattern.search(source)]


def test_the_scan_recognises_each_mechanism():
    samples = ['open(f"/proc/{pid}/stat")', "libc.prctl(1, 9)", "os.pidfd_open(pid)",
               "socket.SO_PEERCRED", r'sock.bind("\0" + name)', "select.epoll()",
               'Path("/dev/shm")', "os.sched_setaffinity(0, {1})"]
    assert [linux_only(s) for s in samples] == [[name] for name in LINUX_ONLY]
    assert linux_only("process = psutil.Process(pid)  # procedure, shmem, pidfile") == []


def code_of(source: str) -> str:
    """The source without its comments and docstrings (they may name a mechanism to explain it)."""
    lines = source.splitlines(keepends=True)
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            for n in range(body[0].lineno - 1, body[0].end_lineno):
                lines[n] = "\n"
    return "".join(line.split("#", 1)[0] + "\n" if "#" in line else line for line in lines)


def test_the_package_uses_no_linux_only_mechanism():
    assert linux_only(code_of('"""Reads /proc."""\nx = 1  # not prctl\n')) == []
    assert linux_only(code_of('x = open("/proc/self/stat")\n')) == ["/proc"]
    found = {str(path.relative_to(ROOT)): linux_only(code_of(path.read_text(encoding="utf-8")))
             for path in sorted((ROOT / "course_lib").rglob("*.py"))}
    assert {path: names for path, names in found.items() if names} == {}
