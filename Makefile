# One target per job; every target bootstraps .venv from the pinned dependencies first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb))
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)
CHROMIUM ?= /usr/bin/chromium
BROWSER_TIMEOUT ?= 300
BROWSER_BUDGET ?= 600
# No PYTHONPATH: the editable install finds course_lib, and servers get theirs from server_env().
export PYTHONDONTWRITEBYTECODE := 1
PIP_QUIET := --quiet --disable-pip-version-check --no-input
# The set-up's installer: pip brings in only uv (one wheel, pinned in .ci/constraints.txt), and uv
# installs everything else (course_lib/tooling/pinned_install.py: the same flags), into the venv
# it is named (--python), every module compiled to bytecode as pip would (PYTHONDONTWRITEBYTECODE).
UV_INSTALL := -m uv pip install --quiet --compile-bytecode --python $(BIN)/python
# An interpreter the course can use (3.11 or newer, with pip); a .venv that fails this is rebuilt.
USABLE := import sys, pip; sys.exit(sys.version_info < (3, 11))
NEED_PYTHON = v=$$($(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null); \
  case "$$v" in 3.1[1-9]|3.[2-9][0-9]) ;; *) echo "The course needs Python 3.11 or newer, and $(PYTHON) is \
  $${v:-not found}: install Python 3.12 (python.org, brew install python@3.12 or apt install python3.12) \
  and run: make $(or $(MAKECMDGOALS),test) PYTHON=python3.12" >&2; exit 1;; esac

.PHONY: lab instructor classroom classroom-install classroom-progress binder-check test test-beside check portable docs progress regen bench student slides slides-check presentation browser-check solution-mutants record lock clean

# The set-up also installs chapter 07's peers (Node.js MCP clients and servers) exactly as locked
# in fixtures/peers/package-lock.json, with the npm of the pinned Node.js wheel: no global install;
# the same step installs the slide decks' reveal.js, locked in fixtures/slides/package-lock.json.
# And a second interpreter, .venv-sdk129, with mcp==1.29.0 (the source articles' version) pinned in
# .ci/constraints-sdk129.txt: the chapters that compare SDK versions run a real 1.29.0 peer from it.
# And .venv-servers, the real Python servers chapter 07 audits (and FastMCP), pinned in
# .ci/constraints-servers.txt.
# An unsupported Python is refused before anything is installed; a .venv or .venv-sdk129 that a
# failed or older set-up left unusable is rebuilt; the stamp is written only when all of it worked.
$(STAMP): pyproject.toml .ci/constraints.txt .ci/constraints-sdk129.txt .ci/constraints-servers.txt fixtures/peers/package.json fixtures/peers/package-lock.json fixtures/slides/package.json fixtures/slides/package-lock.json fixtures/classroom/package.json fixtures/classroom/package-lock.json
	@rm -f $@
	@$(BIN)/python -c '$(USABLE)' 2>/dev/null || { $(NEED_PYTHON); rm -rf $(VENV) && $(PYTHON) -m venv $(VENV); }
	@.venv-sdk129/bin/python -c '$(USABLE)' 2>/dev/null || rm -rf .venv-sdk129
	@.venv-servers/bin/python -c '$(USABLE)' 2>/dev/null || rm -rf .venv-servers
	$(BIN)/python -m pip install $(PIP_QUIET) -c .ci/constraints.txt uv
	$(BIN)/python $(UV_INSTALL) -c .ci/constraints.txt -e '.[test,classroom]'
	@# the three installs are independent (npm ci, .venv-sdk129, .venv-servers): side by side, and
	@# the set-up fails when any of them does
	@$(BIN)/python -m course_lib.chapters.peers_lab install & a=$$!; \
	 $(BIN)/python -m course_lib.sdk129 install & b=$$!; \
	 $(BIN)/python -m course_lib.chapters.servers_env install & c=$$!; \
	 status=0; for job in $$a $$b $$c; do wait $$job || status=1; done; exit $$status
	@touch $@

## lab: set up and open the student copy of the course (student/, no solutions) in JupyterLab;
##      a chapter is copied only when student/ does not have it yet, so your work is never overwritten
##      it opens at chapter 00, and JupyterLab's news pop-up is off (course_lib/tooling/lab.py)
lab: student
	$(BIN)/python -m course_lib.tooling.lab student $(ROOT_FLAG) $(LAB_ARGS)

## instructor: open the full course (notebooks/, with the reference solutions) in JupyterLab, on a
##             scratch copy made afresh outside the repository, with its own workspace and autosave
##             off: nothing an instructor runs, clicks or saves changes a committed chapter
instructor: $(STAMP)
	$(BIN)/python -m course_lib.tooling.lab notebooks $(ROOT_FLAG) $(LAB_ARGS)

## classroom: serve the student copy to a class from this machine (Linux, as root): JupyterHub on
##            127.0.0.1:$(PORT) only, one system user, copy (~/course) and lab server per name of
##            CLASS (one a line), a workshop password; the instructor (INSTRUCTOR) is the admin and
##            sees /hub/progress; a lab server idle IDLE minutes stops; Ctrl-C stops everything
##            (course_lib/tooling/classroom.py, docs/classroom.md)
CLASS ?= roster.txt
PORT ?= 8000
IDLE ?= 60
INSTRUCTOR ?= instructor
classroom: classroom-install
	$(BIN)/python -m course_lib.tooling.classroom serve $(CLASS) --port $(PORT) --idle-minutes $(IDLE) --instructor $(INSTRUCTOR) $(CLASSROOM_ARGS)

## classroom-install: build .venv-classroom, the interpreter the students' servers run (once; the
##                    classroom's real-hub test needs it too, so CI runs this before make test)
classroom-install: $(STAMP)
	$(BIN)/python -m course_lib.tooling.classroom install

## classroom-progress: the class's progress table (every student's best score in every exercise)
classroom-progress: $(STAMP)
	$(BIN)/python -m course_lib.tooling.classroom progress $(CLASS)

## binder-check: run binder/postBuild (Binder's set-up: make lab's install steps) on a clean clone
##               of the committed tree, against the pinned packages (reaches the package registries)
binder-check: $(STAMP)
	COURSE_SETUP_CHECK=1 $(BIN)/python -m pytest -p no:cacheprovider -q -n 0 -s tests/world/test_binder.py

## test: set up and run the whole suite (course_lib tests + strict nbval on every chapter, the
##       25 slowest tests listed), and beside it the portable selection (make portable), then, when
##       Chromium is installed, the slides check (every deck, one browser, a few seconds a deck)
##       and a short real-browser check (the chapters with widgets, each driven by real clicks:
##       00 and 02 here; 01 is run and clicked through by the instructor-view test, once per run)
BROWSER_SMOKE := notebooks/00_orientation.ipynb notebooks/02_cursor_failures.ipynb
# six workers on two cores: the suite mostly waits (server starts, budgets, kernels, a browser), it
# does not compute; make bench measures the wall time. The steps after the pytest part need nothing
# from it, so they run beside it (test-beside), their output printed after pytest's; make test fails
# when either part does.
test: $(STAMP)
	@log=$$(mktemp); $(MAKE) --no-print-directory test-beside >"$$log" 2>&1 & beside=$$!; \
	 $(BIN)/python -m pytest -n 6 --durations=25 $(addprefix --ignore=,$(PORTABLE_TESTS)) $(PYTEST_ARGS); \
	 status=$$?; wait $$beside || status=1; cat "$$log"; rm -f "$$log"; exit $$status

test-beside: $(STAMP)
	@$(MAKE) --no-print-directory portable
	@if [ -x "$(CHROMIUM)" ]; then \
	   $(MAKE) --no-print-directory slides-check && \
	   $(MAKE) --no-print-directory browser-check BROWSER_NOTEBOOKS="$(BROWSER_SMOKE)"; \
	 else echo "browser check skipped: no Chromium at $(CHROMIUM) (apt-get install -y chromium)"; fi

## check: the fast layer, tests/inprocess (no process; about 35 s of CPU, four workers): the loop
##        to run after each edit; a test's layer is its directory (tests/inprocess|stdio|world)
# (a test file left at tests/ top level is collected too: it fails, saying where to move it)
check: $(STAMP)
	$(BIN)/python -m pytest -n 4 -m inprocess -q tests/inprocess $(wildcard tests/test_*.py) $(PYTEST_ARGS)

## portable: a few real-stdio test files as a Mac runs them: the temporary directory behind a
##           symlink (macOS's /var -> /private/var), so lab directories, logs and the sweep of
##           what a server left behind are all found through it; and from a checkout under a long
##           path, as a student's clone may be (a command line longer than a terminal's 80 columns)
##           (make test runs these files only here, so they run once)
PORTABLE_TESTS ?= tests/stdio/test_walker.py tests/stdio/test_lab_exit.py tests/stdio/test_bundles.py tests/stdio/test_fastlaunch.py
LONG_CHECKOUT := course-checkouts/students-workshop-2026-december/participant-laptop-copy/mcp-robustness-course
portable: $(STAMP)
	@tmp=$$(mktemp -d) && mkdir "$$tmp/private" && ln -s private "$$tmp/tmp" && \
	 mkdir -p "$$(dirname "$$tmp/$(LONG_CHECKOUT)")" && ln -s "$(CURDIR)" "$$tmp/$(LONG_CHECKOUT)" && \
	 (cd "$$tmp/$(LONG_CHECKOUT)" && TMPDIR="$$tmp/tmp" "$$tmp/$(LONG_CHECKOUT)/$(BIN)/python" -m pytest -n 2 -q -p no:cacheprovider $(PORTABLE_TESTS)); \
	 status=$$?; rm -rf "$$tmp"; exit $$status

## browser-check: run every chapter in JupyterLab in headless Chromium; screenshots in screenshots/
BROWSER_NOTEBOOKS ?= $(NOTEBOOKS)
browser-check: $(STAMP)
	CHROMIUM=$(CHROMIUM) $(BIN)/python -m course_lib.tooling.browser_check --timeout $(BROWSER_TIMEOUT) --budget $(BROWSER_BUDGET) $(BROWSER_ARGS) $(BROWSER_NOTEBOOKS)

## slides: export every chapter as reveal.js slides into slides/ (solution cells left out), with
##         the pinned reveal.js (fixtures/slides) copied next to them: the folder works offline,
##         and each slide fits 1280 x 720 (deck.js shrinks, wraps or continues what does not)
slides: $(STAMP)
	$(BIN)/python -m course_lib.tooling.slides $(NOTEBOOKS) --out slides

## slides-check: every chapter's deck in one headless Chromium at 1280 x 720, network blocked:
##       fails on a slide taller than the slide, a line cut at the right, any network request,
##       a solution on a slide, a table/widget/placeholder problem; reports explanations on their
##       own sub-slide, repeated section numbers and stderr boxes (course_lib/tooling/slides_check.py)
SLIDES_NOTEBOOKS ?= $(NOTEBOOKS)
slides-check: $(STAMP)
	CHROMIUM=$(CHROMIUM) $(BIN)/python -m course_lib.tooling.browser_check --slides $(SLIDES_NOTEBOOKS)

## presentation: each chapter's presenting, exercise and measured run minutes, the cells to run
##               before class, the one-day and two-day tracks, and what breaks the presentation
##               rules; PRESENTATION_ARGS=--measure executes every chapter and rewrites docs/timings.json
presentation: $(STAMP)
	$(BIN)/python -m course_lib.tooling.presentation $(PRESENTATION_ARGS) $(or $(NB),$(NOTEBOOKS))

## regen: re-execute every chapter in place (deterministic: a second run changes nothing)
regen: $(STAMP)
	$(BIN)/python -m course_lib.tooling.regen regen $(or $(NB),$(NOTEBOOKS))

## bench: speed figures, measured side by side in one run (never asserted in tests);
##        BENCH_ARGS="--only suite --against main" times the pytest part here and on main's tree
bench: $(STAMP)
	$(BIN)/python -m course_lib.tooling.bench $(BENCH_ARGS)

## solution-mutants: every reference solution, mutated one plausible mistake at a time, graded by its
##          exercise's check against real servers: killed / equivalent / surviving per exercise
##          (minutes; NB=notebooks/01_pagination.ipynb for one chapter)
solution-mutants: $(STAMP)
	$(BIN)/python -m course_lib.tooling.solution_mutants $(NB)

## record: re-run every recorded solution (fixtures/grading/transcripts/*.expected.json) on the real
##         servers and rewrite its transcript, which the judges' in-process tests read
##         (EXERCISES="walk" for one; course_lib/tooling/record.py)
record: $(STAMP)
	$(BIN)/python -m course_lib.tooling.record $(EXERCISES)

## docs: regenerate the reference pages in docs/ (the module guide, the source-article map);
##       tests/inprocess/test_docs.py fails when a committed page differs from what this writes
docs: $(STAMP)
	$(BIN)/python -m course_lib.tooling.docs

## student: write the student copy into student/: every chapter without its solution cells, outputs
##          kept (the check cells show the untouched starter's failing scorecard); existing files are kept
student: $(STAMP)
	$(BIN)/python -m course_lib.tooling.student_copy

## progress: your best score in each exercise of the student copy (student/.progress.json)
progress: $(STAMP)
	$(BIN)/python -m course_lib.progress

## lock: re-resolve the pinned constraints after changing pyproject.toml
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet --disable-pip-version-check '.[test,classroom]'
	.lock-venv/bin/python -m pip freeze --exclude-editable | grep -v '^mcp-robustness-course' > .ci/constraints.txt
	rm -rf .lock-venv

## clean: remove what the tooling builds (never student/ nor .classroom/: the students' work and
##        the class's accounts)
clean:
	rm -rf $(VENV) .venv-sdk129 .venv-servers .venv-classroom .venv-classroom.lock .pytest_cache slides bench-results screenshots
