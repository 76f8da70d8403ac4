"""A deck needs nothing but its own folder: the pinned reveal.js is copied next to it, and no
script, style sheet or font comes from anywhere else (the browser check also blocks the network)."""
import json
import re

import pytest

from course_lib.paths import NOTEBOOKS, ROOT
from course_lib.tooling import slides

PINS = ROOT / "fixtures" / "slides"
_LOADS = re.compile(r"<(?:script|link|img)\b[^>]*?\b(?:src|href)=[\"']([^\"']+)[\"']", re.I)


@pytest.fixture(scope="module")
def deck():
    """The run's one export of chapter 01's deck (``slides.exported``: the deck tests and
    ``make slides-check`` read the same file), in its folder with the pinned reveal.js."""
    return slides.exported(NOTEBOOKS / "01_pagination.ipynb")


def test_reveal_js_is_pinned_exactly_and_installed_at_its_pin():
    pin = json.loads((PINS / "package.json").read_text())["dependencies"]["reveal.js"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", pin), "an exact version, no range"
    lock = json.loads((PINS / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/reveal.js"]["version"] == pin
    assert lock["packages"]["node_modules/reveal.js"]["integrity"].startswith("sha512-")
    assert slides.reveal_version() == pin


def test_the_set_up_installs_the_decks_reveal_js():
    from course_lib.chapters import peers_lab

    assert peers_lab.SLIDES_DIR == PINS
    makefile = (ROOT / "Makefile").read_text()
    stamp = next(line for line in makefile.splitlines() if line.startswith("$(STAMP):"))
    assert "fixtures/slides/package.json" in stamp and "fixtures/slides/package-lock.json" in stamp


def test_a_deck_loads_only_files_next_to_it(deck):
    html = deck.read_text(encoding="utf-8")
    loads = _LOADS.findall(html)
    assert "reveal.js/dist/reveal.js" in loads and "reveal.js/dist/reveal.css" in loads
    for url in loads:
        assert not re.match(r"^(https?:)?//", url), url
        assert (deck.parent / url).is_file(), f"{url} is not in the deck's folder"
    assert not re.search(r"@import\s+url\((?:https?:)?//", html)
    for cdn in ("require.js", "require.min.js", "jquery", "MathJax", "mermaid", "unpkg.com", "cdnjs"):
        assert cdn not in "\n".join(loads), cdn
    theme = (deck.parent / "reveal.js" / "dist" / "theme" / f"{slides.THEME}.css").read_text()
    imports = re.findall(r"@import url\(([^)]+)\)", theme)
    assert imports and all(not re.match(r"^(https?:)?//", i) for i in imports), imports


def test_the_deck_is_sized_and_fitted_by_its_own_script(deck):
    html = deck.read_text(encoding="utf-8")
    assert "width: W, height: H" in html and "var W = 1280, H = 720" in html
    assert "fitDeck();" in html and "course-measuring" in html
    assert 'class="jp-InputPrompt' not in html, "no In [n]: column: the code gets the slide's width"
