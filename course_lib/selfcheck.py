"""Self-check questions at the end of a chapter: ``selfcheck.ask("04")``.

Each chapter has 3–5 short questions on what its own cells measured. They are written by hand
in ``fixtures/selfcheck/NN.json``: the question, its choices, the answer (one of the choices),
the section whose cell shows it (``where``), one sentence on what that cell shows (``why``) and
a short piece of that cell's stored output (``evidence``: the tests find it there, so a question
cannot drift away from what the chapter measured).

``ask`` shows one row of buttons per question; a click answers at once, in the click's own
callback (no task is scheduled): right, with what the cell showed, or not this one, with the
section to read again. What a saved notebook, the student copy and the slides show is the
widget's still (see ``widget_html.FirstState``): the questions and their choices, never the answers.

A question marked ``"transfer": true`` asks about a case the chapter did not show (predict what
it does, or what your server should answer); its ``where`` names a section after the question,
whose cells (tagged ``reveal``) run that case: the student copy keeps their code without their
outputs, so the student predicts, clicks, then runs them. At least half of a chapter's questions
are transfer questions, and each has three or more choices.

``answers`` is the instructor's view, in a cell tagged ``answers`` that the student copy and
the slides leave out (``tooling.student_copy.dropped``); it answers only in the instructor copy
(a kernel started in ``notebooks/``), never in a student's copy.
"""
from __future__ import annotations

import html
import json
import textwrap
from dataclasses import dataclass
from pathlib import Path

import ipywidgets as W

from course_lib.display import Table
from course_lib.errors import CourseError
from course_lib.paths import FIXTURES, ROOT
from course_lib.progress import FILE as PROGRESS_FILE
from course_lib.widget_html import FirstState

FOLDER = FIXTURES / "selfcheck"
FEWEST, MOST = 3, 5
WIDTH = 100
RIGHT, WRONG = "right", "wrong"


class SelfCheckError(CourseError):
    """A question file that cannot be asked: missing, or breaking one of the rules above."""

    reason = "bad_selfcheck"


@dataclass(frozen=True)
class Question:
    text: str
    choices: tuple[str, ...]
    answer: str
    where: str      # the heading of the section whose cell shows the answer
    why: str        # what that cell's output shows, in one sentence
    evidence: str   # a piece of that cell's stored output
    transfer: bool = False  # a case the chapter did not show, run after the question


def load(chapter: str) -> list[Question]:
    """The questions of ``fixtures/selfcheck/<chapter>.json``, checked: 3–5 of them, each with at
    least two distinct choices, and its answer one of them."""
    path = FOLDER / f"{chapter}.json"
    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
        questions = [Question(q["question"], tuple(q["choices"]), q["answer"], q["where"], q["why"], q["evidence"],
                              bool(q.get("transfer", False)))
                     for q in spec["questions"]]
    except FileNotFoundError:
        raise SelfCheckError(f"no self-check for chapter {chapter!r}: {path.name} is not in fixtures/selfcheck") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise SelfCheckError(f"fixtures/selfcheck/{path.name} is not a question file: {exc!r}") from None
    if not FEWEST <= len(questions) <= MOST:
        raise SelfCheckError(f"chapter {chapter} has {len(questions)} questions; a self-check has {FEWEST}–{MOST}")
    for n, q in enumerate(questions, 1):
        if len(q.choices) < 2 or len(set(q.choices)) != len(q.choices):
            raise SelfCheckError(f"chapter {chapter}, question {n}: needs two or more distinct choices")
        if q.answer not in q.choices:
            raise SelfCheckError(f"chapter {chapter}, question {n}: its answer {q.answer!r} is not one of its choices")
    return questions


def inline(text: str) -> str:
    """A question's Markdown as HTML: the text escaped, each `code` span shown as code."""
    parts = html.escape(text, quote=False).split("`")
    if len(parts) % 2 == 0:  # an odd number of backticks: nothing is a code span
        return html.escape(text, quote=False)
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def plain(text: str) -> str:
    """A choice as its button shows it (a button shows plain text: no backticks)."""
    return text.replace("`", "")


class QuestionView(W.VBox):
    """One question: its text, one button per choice, and the feedback of the last click."""

    def __init__(self, number: int, question: Question):
        self.number, self.question = number, question
        self.prompt = W.HTML(f"<b>{number}.</b> {inline(question.text)}")
        self.buttons = [W.Button(description=plain(choice), layout=W.Layout(width="auto"))
                        for choice in question.choices]
        self._choices = {plain(choice): choice for choice in question.choices}
        for button in self.buttons:
            button.on_click(self._clicked)
        self.feedback = W.HTML()
        self.verdict: str | None = None
        super().__init__([self.prompt, W.HBox(self.buttons), self.feedback])

    def _clicked(self, button: W.Button) -> None:
        self.choose(self._choices[button.description])

    def choose(self, choice: str) -> str:
        """Answer with ``choice`` (what a click on its button does): ``"right"`` or ``"wrong"``."""
        q = self.question
        self.verdict = RIGHT if choice == q.answer else WRONG
        for button in self.buttons:
            button.button_style = "" if button.description != plain(choice) else \
                "success" if self.verdict == RIGHT else "danger"
        where = inline(q.where)
        if self.verdict == RIGHT:
            text = f"✔ Right. {inline(q.why)} (section “{where}”)"
            color = "#137333"
        else:
            text = f"✘ Not this one. Read the cell under “{where}” again, then try another answer."
            color = "#a50e0e"
        self.feedback.value = f"<div style='color:{color}; margin:2px 0 6px 0'>{text}</div>"
        return self.verdict


class SelfCheck(FirstState, W.VBox):
    """A chapter's self-check: every question, and how many are answered right so far."""

    def __init__(self, chapter: str, questions: list[Question] | None = None):
        self.chapter = chapter
        self.questions = [QuestionView(n, q) for n, q in enumerate(questions or load(chapter), 1)]
        self.tally = W.HTML()
        for view in self.questions:
            for button in view.buttons:
                button.on_click(lambda _: self._count())  # after the question's own handler
        title = W.HTML(f"<b>Self-check, chapter {html.escape(chapter)}</b>: {len(self.questions)} questions on "
                       "what this chapter's cells measured. Click an answer; each click says right or wrong.")
        super().__init__([title, *self.questions, self.tally])

    def _count(self) -> None:
        right = sum(v.verdict == RIGHT for v in self.questions)
        self.tally.value = f"<i>{right} of {len(self.questions)} answered right</i>"

    def text(self) -> str:
        """The plain-text form (a saved notebook's ``text/plain``): the questions and their
        choices, wrapped at 100 characters; no answer."""
        # The widgets' placeholder words: the slides check counts this output among the widget stills.
        lines = [f"Self-check, chapter {self.chapter} "
                 "(run the cell in JupyterLab to answer: a click says right or wrong)"]
        for view in self.questions:
            q = view.question
            lines += textwrap.wrap(f"{view.number}. {q.text}", WIDTH, subsequent_indent="   ")
            lines += textwrap.wrap("   ".join(f"[{chr(97 + i)}] {c}" for i, c in enumerate(q.choices)), WIDTH,
                                   initial_indent="   ", subsequent_indent="   ")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.text()

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = self.text()  # whole: ipywidgets cuts a widget's repr at 110 characters
        return bundle


def ask(chapter: str) -> SelfCheck:
    """The self-check of ``chapter`` (``"06"``), as a widget: the last expression of its cell."""
    return SelfCheck(chapter)


def answers(chapter: str) -> Table:
    """The instructor's view: each question's answer and the section that shows it. Never in a
    student's copy (a folder with the copy's ``.progress.json``, or ``student/``): a SelfCheckError."""
    here = Path.cwd().resolve()
    if (here / PROGRESS_FILE).exists() or here == (ROOT / "student").resolve():
        raise SelfCheckError("the answers are shown in the instructor copy only: in your copy, click an answer "
                             "and the self-check says right or wrong")
    return Table(["#", "answer", "shown under"],
                 [[n, q.answer, q.where] for n, q in enumerate(load(chapter), 1)],
                 f"Answers of chapter {chapter}'s self-check (instructor copy only)")
