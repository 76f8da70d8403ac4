"""The self-check questions: 3–5 per chapter, each answer one of its choices and shown by a stored
output of the section it names; a click answers at once; the student copy and the slides show the
questions and choices, never an answer; the instructor copy shows the answers."""
import dataclasses
import html
import json
import re

import nbformat
import pytest
from IPython.core.formatters import DisplayFormatter
from test_student_copy_unit import strings

from course_lib import selfcheck
from course_lib.paths import NOTEBOOKS
from course_lib.tooling import slides
from course_lib.tooling.regen import cell_text, stored_rows
from course_lib.tooling.student_copy import ANSWERS, REVEAL, generate, tags

CHAPTERS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
NUMBERS = [p.name[:2] for p in CHAPTERS]
chapter = pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)


def words(text: str) -> str:
    return " ".join(text.split())


def visible(markup: str) -> str:
    """The words an HTML fragment shows."""
    return words(html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"</?code>", "", markup))))


def sections(nb) -> dict[str, list[str]]:
    """Each heading's text → the stored text outputs of the code cells under it (to the next heading)."""
    found: dict[str, list[str]] = {}
    current: list[str] = []
    for cell in nb.cells:
        heads = [line.lstrip("#").strip() for line in cell.source.splitlines() if re.match(r"^#{1,6}\s", line)]
        if cell.cell_type == "markdown" and heads:
            current = []
            for head in heads:
                found[head] = current
        elif cell.cell_type == "code":
            current.append(words(cell_text(cell)))
    return found


def the_cells(nb, chapter_number):
    ask = [c for c in nb.cells if c.cell_type == "code" and f'selfcheck.ask("{chapter_number}")' in c.source]
    answers = [c for c in nb.cells if ANSWERS in tags(c)]
    return ask, answers


def test_every_chapter_has_a_question_file_and_no_file_is_left_over():
    files = sorted(p.stem for p in selfcheck.FOLDER.glob("*.json"))
    assert files == NUMBERS


@chapter
def test_three_to_five_questions_each_answer_one_of_its_choices(path):
    spec = json.loads((selfcheck.FOLDER / f"{path.name[:2]}.json").read_text(encoding="utf-8"))
    questions = spec["questions"]
    assert spec["chapter"] == path.name[:2]
    assert 3 <= len(questions) <= 5
    for q in questions:
        assert q["answer"] in q["choices"], q["question"]
        assert len(set(q["choices"])) == len(q["choices"]) >= 2
        assert q["why"] and q["answer"] not in q["where"]
    assert len(selfcheck.load(path.name[:2])) == len(questions)


@chapter
def test_each_answer_is_shown_by_a_stored_output_of_the_section_it_names(path):
    nb = nbformat.read(path, as_version=4)
    found = sections(nb)
    (ask,), _ = the_cells(nb, path.name[:2])
    after = sections(nbformat.from_dict(dict(nb, cells=nb.cells[nb.cells.index(ask) + 1:])))
    for q in selfcheck.load(path.name[:2]):
        assert q.where in found, f"no heading {q.where!r}"
        assert any(words(q.evidence) in text for text in found[q.where]), (q.where, q.evidence)
        # a transfer question is answered by a case run after it, never by a cell above it
        assert (q.where in after) == q.transfer, (q.where, q.transfer)


@chapter
def test_at_least_half_of_the_questions_ask_for_transfer_and_none_has_two_choices(path):
    questions = selfcheck.load(path.name[:2])
    assert 2 * sum(q.transfer for q in questions) >= len(questions)
    assert min(len(q.choices) for q in questions) >= 3


def test_the_answers_are_given_in_the_instructor_copy_only(tmp_path, monkeypatch):
    monkeypatch.chdir(NOTEBOOKS)
    assert selfcheck.answers("01").rows
    monkeypatch.chdir(tmp_path)  # a scratch copy of the chapters, as make instructor serves
    assert selfcheck.answers("01").rows
    generate(tmp_path / "student")  # a student's copy: its chapters and its .progress.json
    monkeypatch.chdir(tmp_path / "student")
    with pytest.raises(selfcheck.SelfCheckError, match="instructor copy only"):
        selfcheck.answers("01")


def test_a_broken_question_file_is_refused_by_name(tmp_path, monkeypatch):
    monkeypatch.setattr(selfcheck, "FOLDER", tmp_path)
    good = {"question": "q?", "choices": ["a", "b"], "answer": "a", "where": "w", "why": "y", "evidence": "e"}
    cases = {
        "no self-check for chapter '98'": None,
        "question 1: its answer 'c' is not one of its choices": [dict(good, answer="c")] * 3,
        "has 2 questions; a self-check has 3–5": [good] * 2,
        "has 6 questions": [good] * 6,
        "question 2: needs two or more distinct choices": [good, dict(good, choices=["a", "a"]), good],
        "is not a question file": [{"question": "q?"}] * 3,
    }
    for message, questions in cases.items():
        if questions is not None:
            (tmp_path / "98.json").write_text(json.dumps({"chapter": "98", "questions": questions}))
        with pytest.raises(selfcheck.SelfCheckError, match=re.escape(message)):
            selfcheck.load("98")


@pytest.mark.parametrize("number", NUMBERS)
def test_a_click_answers_at_once_right_or_wrong_and_points_to_the_section(number):
    check = selfcheck.ask(number)
    questions = selfcheck.load(number)
    assert len(check.questions) == len(questions)
    for view, q in zip(check.questions, questions):
        assert view.feedback.value == "" and view.verdict is None
        shown = selfcheck.plain  # a button and the feedback show the Markdown rendered: no backticks
        wrong = next(b for b in view.buttons if b.description != shown(q.answer))
        wrong.click()  # the button's own click handler, in-process: no task is scheduled
        said = visible(view.feedback.value)
        assert view.verdict == "wrong" and said.startswith("✘ Not this one.")
        assert f"“{words(shown(q.where))}”" in said and words(shown(q.why)) not in said
        assert shown(q.answer) not in said
        assert wrong.button_style == "danger"
        right = next(b for b in view.buttons if b.description == shown(q.answer))
        right.click()
        said = visible(view.feedback.value)
        assert view.verdict == "right" and said == f"✔ Right. {words(shown(q.why))} (section “{words(shown(q.where))}”)"
        assert right.button_style == "success" and wrong.button_style == ""
    assert check.tally.value == f"<i>{len(questions)} of {len(questions)} answered right</i>"


def test_a_question_shows_its_markdown_rendered():
    q = selfcheck.Question("Does `tools/list` page?", ("`yes`", "no", "maybe"), "`yes`", "w", "It *does*: `nextCursor`.", "e")
    view = selfcheck.QuestionView(1, q)
    assert view.prompt.value == "<b>1.</b> Does <code>tools/list</code> page?"
    assert [b.description for b in view.buttons] == ["yes", "no", "maybe"]
    view.buttons[0].click()
    assert view.verdict == "right" and "<code>nextCursor</code>" in view.feedback.value
    assert selfcheck.inline("a ` b < c") == "a ` b &lt; c"  # a lone backtick stays as it is


def test_the_widget_is_synchronous():
    """A click's work is done when ``click()`` returns: nothing is left for an event loop."""
    import asyncio

    check = selfcheck.ask("02")
    view = check.questions[0]
    loop = asyncio.new_event_loop()
    try:
        asyncio.set_event_loop(loop)
        view.buttons[0].click()
        assert view.verdict is not None and view.feedback.value
        assert asyncio.all_tasks(loop) == set()
    finally:
        asyncio.set_event_loop(None)
        loop.close()


@pytest.mark.parametrize("number", NUMBERS)
def test_the_still_is_the_same_whatever_the_answers(number):
    """What a saved notebook, the copy and the slides show carries no trace of the answers."""
    questions = selfcheck.load(number)
    stills = set()
    for shift in range(max(len(q.choices) for q in questions)):
        moved = [dataclasses.replace(q, answer=q.choices[shift % len(q.choices)]) for q in questions]
        data, _ = DisplayFormatter().format(selfcheck.SelfCheck(number, moved))
        stills.add((data["text/html"], data["text/plain"]))
    assert len(stills) == 1
    ((still, plain),) = stills
    for q in questions:
        assert words(q.why) not in words(still + plain)
        for choice in q.choices:
            assert f"] {choice}" in words(plain)


@chapter
def test_each_chapter_asks_near_its_end_and_stores_the_still(path):
    nb = nbformat.read(path, as_version=4)
    number = path.name[:2]
    (ask,), (answers,) = the_cells(nb, number)
    at = nb.cells.index(ask)
    assert nb.cells[at - 1].source.startswith("## Self-check")
    # between the question and the answers: only the cases that reveal them (headings, reveal cells)
    between = nb.cells[at + 1:-2]
    assert all(c.cell_type == "markdown" or REVEAL in tags(c) for c in between)
    assert [c for c in nb.cells if REVEAL in tags(c)] == [c for c in between if c.cell_type == "code"]
    assert nb.cells[-2] is answers
    assert nb.cells[-1].source.startswith("**Next:**")
    assert ask.metadata["slideshow"] == answers.metadata["slideshow"] == {"slide_type": "-"}
    (output,) = ask.outputs
    assert sorted(output["data"]) == ["text/html", "text/plain"]
    assert output["data"]["text/html"].startswith("<div class='course-widget-still'>")
    data, _ = DisplayFormatter().format(selfcheck.ask(number))
    assert output["data"]["text/plain"] == data["text/plain"]
    assert output["data"]["text/html"] == data["text/html"]
    # the instructor copy: the answers, collapsed, one row per question
    assert answers.metadata["jupyter"] == {"outputs_hidden": True}
    assert cell_text(answers).startswith(f"Answers of chapter {number}'s self-check (instructor copy only)")
    rows = stored_rows(path, f'selfcheck.answers("{number}")')
    assert rows == [{"#": str(n), "answer": q.answer, "shown under": q.where}
                    for n, q in enumerate(selfcheck.load(number), 1)]


def _answer_marks(number: str) -> list[str]:
    """What only the answers show: the answers table's title and every question's explanation."""
    return [f"Answers of chapter {number}", "answered right", *(words(q.why) for q in selfcheck.load(number))]


def test_the_student_copy_has_no_answer(tmp_path):
    generate(tmp_path)
    for path in CHAPTERS:
        number = path.name[:2]
        copy = nbformat.read(tmp_path / path.name, as_version=4)
        ask, answers = the_cells(copy, number)
        assert len(ask) == 1 and answers == []
        # the cases that answer a transfer question are there to run, without their outputs
        assert all(c.outputs == [] for c in copy.cells if REVEAL in tags(c))
        text = words(" ".join(strings(copy)))
        assert [mark for mark in _answer_marks(number) if mark in text] == []
        # the control: the instructor copy shows the answers
        full = words(cell_text(the_cells(nbformat.read(path, as_version=4), number)[1][0]))
        assert _answer_marks(number)[0] in full


@pytest.fixture(scope="module")
def decks():
    return {path.name[:2]: slides.exported(path).read_text(encoding="utf-8") for path in CHAPTERS}


@pytest.mark.parametrize("number", NUMBERS)
def test_the_slides_show_the_questions_and_no_answer(number, decks):
    shown = visible(decks[number])
    assert "course-widget-still" in decks[number]
    for q in selfcheck.load(number):
        assert words(selfcheck.plain(q.text)) in shown  # the slides render the question's Markdown
    assert [mark for mark in _answer_marks(number) if mark in shown] == []
    assert f'selfcheck.answers("{number}")' not in shown
