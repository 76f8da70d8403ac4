"""make classroom: a class on JupyterHub, each student their own system user, copy and processes.

In-process: the roster, the class's progress table (hand-written progress files and the table
expected of them in fixtures/classroom/), the hub's settings, and the refusal on a machine that
cannot serve a class. Then one real hub (loopback only) and a real headless Chromium: two students
sign in at once, each runs chapter 01 with its check in their own JupyterLab; neither can reach
the other's server or read the other's copy; the instructor's page and the command show both rows;
stopping the hub leaves no process behind; the test users are removed afterwards.
"""
import asyncio
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest

from course_lib.paths import NOTEBOOKS, ROOT
from course_lib.tooling import classroom, classroom_hub, classroom_install
from course_lib.tooling.chromium import CHROMIUM, CHROMIUM_ARGS, chromium_available
from course_lib.tooling.lab_server import _free_port


# -- one real hub, two students at once, the instructor ----------------------------------------------

needs_a_class_machine = pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.geteuid() != 0 or (not chromium_available() and not os.environ.get("CI")),
    reason="the classroom needs Linux, root (it makes system users) and Chromium")

CHAPTER = "01_pagination.ipynb"
# limits, far above a run on a loaded machine (an install of about 6 minutes, a class of about 3):
# a step that hangs fails the test, saying which, instead of holding the suite
INSTALL_WAIT, CLASS_LIMIT = 1800, 900


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:  # not listening yet
        return 0


async def _sign_in(browser, hub: str, name: str, password: str, then: str = ""):
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    page = await context.new_page()
    page.set_default_timeout(180_000)
    await page.goto(f"{hub}/hub/login" + (f"?next={then}" if then else ""), wait_until="domcontentloaded")
    await page.fill("#username_input", name)
    await page.fill("#password_input", password)
    await page.click("#login_submit")
    return context, page


async def _run_chapter(context, url: str, copy: Path) -> dict:
    """Open the student's chapter in their JupyterLab, Run All (its check included), and read
    the cells back: as the browser check runs a chapter, without its widget clicks (the
    instructor view's test clicks this chapter's widget)."""
    import nbformat

    from course_lib.tooling import lab_page

    nb = nbformat.read(copy, as_version=4)
    page = await context.new_page()
    try:
        # a workspace of its own, new and so empty (no ?reset: its reload may race the next step)
        page.set_default_timeout(lab_page.PAGE_TIMEOUT_MS)
        await page.goto(f"{url}/lab/workspaces/w{secrets.token_hex(4)}", wait_until="load")
        await page.wait_for_function("() => window.jupyterapp !== undefined")
        await page.evaluate(lab_page._HELPERS)
        asked = await asyncio.wait_for(page.evaluate(lab_page._OPEN, CHAPTER), 300)
        assert asked is None, f"JupyterLab asked instead of starting the kernel: {asked}"
        await page.evaluate("() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
        await asyncio.wait_for(page.evaluate(lab_page._RUN_ALL), 300)
        cells = await asyncio.wait_for(page.evaluate(lab_page._CELLS), 120)
    finally:
        await asyncio.wait_for(page.close(), 60)
    allowed = {i for i, c in enumerate(nb.cells) if "raises-exception" in c.metadata.get("tags", [])}
    stored = {i: "".join(o.get("text", "") for o in c.get("outputs", []) if o.get("name") == "stderr")
              for i, c in enumerate(nb.cells)}
    code = [(i, c) for i, c in enumerate(cells) if c["code"]]
    return {"cells": len(code), "executed": sum(c["count"] is not None for _, c in code),
            "errors": [f"cell {i}: {e}" for i, c in code if i not in allowed for e in lab_page._errors(c, stored[i])],
            "check": any("PASS" in json.dumps(c["outputs"]) or "FAIL" in json.dumps(c["outputs"]) for _, c in code)}


async def _class(hub: str, students: list[str], instructor: str, secret: dict) -> dict:
    from playwright.async_api import async_playwright

    seen: dict = {"phases": {}}
    started = time.monotonic()
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            signed = await asyncio.gather(*(_sign_in(browser, hub, name, secret["user_password"])
                                            for name in students))

            async def lab(name, context, page):
                await page.wait_for_url(f"**/user/{name}/lab**", timeout=240_000)
                copy = classroom.home_of(name) / classroom.COPY / CHAPTER
                return await _run_chapter(context, f"{hub}/user/{name}", copy)

            results = await asyncio.gather(*(lab(name, *pair) for name, pair in zip(students, signed)))
            seen["results"] = dict(zip(students, results))
            seen["phases"]["signed in, chapter 01 run"] = time.monotonic() - started
            # each student's requests for the other's server and for the instructor's page
            for (name, (context, _)), other in zip(zip(students, signed), reversed(students)):
                theirs = await context.request.get(f"{hub}/user/{other}/api/contents/{CHAPTER}",
                                                   max_redirects=10)
                own = await context.request.get(f"{hub}/user/{name}/api/contents/{CHAPTER}?content=0")
                page = await context.request.get(f"{hub}/hub/progress")
                seen[name] = {"other": theirs.status, "other_body": (await theirs.text())[:400],
                              "own": own.status, "progress_page": page.status}
            # the instructor signs in straight to the progress page (no lab server of their own)
            teacher, page = await _sign_in(browser, hub, instructor, secret["admin_password"], "/hub/progress")
            await page.wait_for_url("**/hub/progress", timeout=60_000)
            seen["instructor_page"] = await page.inner_text("body")
            seen["phases"]["instructor"] = time.monotonic() - started
        finally:
            await asyncio.wait_for(browser.close(), 60)
    return seen


@needs_a_class_machine
def test_two_students_at_once_each_in_their_own_copy_and_the_instructor_sees_both(tmp_path):
    # .venv-classroom: built once, then reused while the pins are unchanged (CI builds it before the suite)
    classroom_install.install(wait=INSTALL_WAIT)
    tag = secrets.token_hex(3)
    students, instructor = [f"mcpt{tag}a", f"mcpt{tag}b"], f"mcpt{tag}t"
    roster = tmp_path / "roster.txt"
    roster.write_text("".join(f"{name}\n" for name in students))
    state = tmp_path / "state"
    port, hub_port, api_port = _free_port(), _free_port(), _free_port()
    hub = f"http://127.0.0.1:{port}"
    log = open(tmp_path / "hub.log", "wb")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "COURSE_LAB_RUN"))}
    proc = subprocess.Popen([sys.executable, "-m", "course_lib.tooling.classroom", "serve", str(roster),
                             "--port", str(port), "--hub-port", str(hub_port), "--api-port", str(api_port),
                             "--instructor", instructor, "--state", str(state), "--idle-minutes", "20"],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                            start_new_session=True)
    tree: dict[int, str] = {}
    try:
        deadline = time.monotonic() + 90
        while _get(f"{hub}/hub/api/") != 200:
            assert proc.poll() is None, (tmp_path / "hub.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the hub did not answer within 90 s"
            time.sleep(0.5)
        secret = json.loads((state / "passwords.json").read_text())
        print(f"hub up: {time.monotonic() - deadline + 90:.0f} s")
        seen = asyncio.run(asyncio.wait_for(_class(hub, students, instructor, secret), CLASS_LIMIT))
        # every process the class started, recorded while it runs
        for child in psutil.Process(proc.pid).children(recursive=True) + [psutil.Process(proc.pid)]:
            try:
                tree[child.pid] = " ".join(child.cmdline())[:120]
            except psutil.Error:
                pass
        owners = {psutil.Process(pid).username() for pid in tree if psutil.pid_exists(pid)}
        printed = subprocess.run([sys.executable, "-m", "course_lib.tooling.classroom", "progress", str(roster)],
                                 capture_output=True, text=True, timeout=60)
        reads = {name: subprocess.run(["runuser", "-u", name, "--", "cat",
                                       str(classroom.home_of(other) / classroom.COPY / ".progress.json")],
                                      capture_output=True, text=True, timeout=30)
                 for name, other in zip(students, reversed(students))}
        own = subprocess.run(["runuser", "-u", students[0], "--", "cat",
                              str(classroom.home_of(students[0]) / classroom.COPY / ".progress.json")],
                             capture_output=True, text=True, timeout=30)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        time.sleep(1)
        left = {pid: cmd for pid, cmd in tree.items() if psutil.pid_exists(pid)
                and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE}
        theirs = [p.pid for p in psutil.process_iter(["username"]) if p.info["username"] in {*students, instructor}]
    finally:
        classroom_hub.stop_hub(proc, 30)  # a failure on the way: the hub's own stop first, then the hard one
        for pid in tree:
            try:
                psutil.Process(pid).kill()
            except psutil.Error:
                pass
        log.close()
        for name in [*students, instructor]:
            classroom.remove_user(name)
    hub_log = (tmp_path / "hub.log").read_text(errors="replace")
    print(", ".join(f"{k} {v:.0f} s" for k, v in seen["phases"].items()))
    for name in students:
        result = seen["results"][name]
        assert result["executed"] == result["cells"] > 0 and result["errors"] == [], (name, result, hub_log[-2000:])
        assert result["check"], "the chapter's check cell printed its scorecard"
        # their own server answers them; the other's does not, nor the instructor's page
        assert seen[name]["own"] == 200
        assert seen[name]["other"] == 403, seen[name]
        assert seen[name]["progress_page"] == 403
        # and the other's copy is not readable by them on the machine either
        assert reads[name].returncode != 0 and "Permission denied" in reads[name].stderr
    assert own.returncode == 0 and "01_pagination" in own.stdout, "the control: a student reads their own"
    assert students[0] in owners and students[1] in owners, "each student's server ran as that student"
    for name in students:
        assert any(line.split()[:1] == [name] and "/" in line for line in printed.stdout.splitlines()), printed.stdout
        assert name in seen["instructor_page"]
    assert "01_pagination/" in printed.stdout and "01_pagination/" in seen["instructor_page"]
    assert proc.returncode is not None and left == {} and theirs == [], (left, theirs)
    assert all(not Path(f"/home/{name}").exists() for name in [*students, instructor])
    assert not any(str(NOTEBOOKS) in cmd for cmd in tree.values()), "no student ran the course's own chapters"
    assert ROOT.exists()
