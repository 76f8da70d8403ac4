"""The slides check fails each damaged deck at its own named check, and passes a sound one.

Small hand-made chapters, exported as ``make slides`` exports them, all opened in one headless
Chromium (``slides_check.check_decks``). Each damage is chosen so that exactly one named check
fails: a slide nothing can fit, a deck whose fitting script is cut out, a request to the network,
a solution on a slide, a placeholder, and the three reports the notebooks' owners fix.
"""
import nbformat
import pytest

from course_lib.tooling import slides, slides_check
from course_lib.tooling.chromium import chromium_available

pytestmark = pytest.mark.skipif(not chromium_available(), reason="needs Chromium")

TABLE = ("<table class='course-table'><thead><tr><th>tool</th><th>page</th></tr></thead>"
         "<tbody><tr><td>alpha</td><td>1</td></tr></tbody></table>")


def md(source):
    return nbformat.v4.new_markdown_cell(source)


def code(source, text="", name="stdout", html=None):
    cell = nbformat.v4.new_code_cell(source, execution_count=1)
    if text:
        cell.outputs.append(nbformat.v4.new_output("stream", name=name, text=text))
    if html:
        cell.outputs.append(nbformat.v4.new_output("display_data", data={"text/html": html, "text/plain": "t"}))
    return cell


def chapter(*cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = [md("# A chapter\n\nWhat it is about."), md("## A section\n\nA sentence."),
                code("print('x')", "x\n", html=TABLE), *cells]
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"c{i:02d}"
    return nb


def long_output(lines=90, width=140):
    return "\n".join(f"{i:3d} " + "word " * ((width - 4) // 5) for i in range(lines)) + "\n"


def solution_chapter():
    nb = chapter(md("## Exercise\n\nWrite `my_walk`."), code("async def my_walk(session):\n    return []"))
    sol = code("async def reference_walk(session):\n    return await collect_every_page_of(session)")
    sol.metadata["tags"] = ["solution"]
    nb.cells.append(sol)
    return nb


CASES = {
    # a sound chapter: a tall and wide output the deck fits (continuation slides, scaled lines)
    "sound": (chapter(md("## Long output"), code("show()", long_output())), None),
    # a slide nothing can fit: one block taller than any slide
    "unfittable": (chapter(code("show()", html="<div style='height:1500px; width:200px'>one block</div>")), None),
    # the deck's fitting cut out: the long output overflows, down and to the right
    "unfitted": (chapter(md("## Long output"), code("show()", long_output())), "no-fitting"),
    "network": (chapter(md("## A picture\n\n<img src='https://example.com/logo.png' width='10'>")), None),
    # the deck rendered with the solution cell kept (what the export must never do)
    "solution": (solution_chapter(), "keep-solutions"),
    "reference": (chapter(code("reference_walk = None")), None),
    "placeholder": (chapter(code("viewer", html="<p>(run the cell in JupyterLab to see it)</p>")), None),
    "fine print": (chapter(md("## Fine print\n\n<p style='font-size:12px'>read it from the back row</p>")), None),
    # a slide a little too tall: shrinking it would put its 16 px code under 16 px, so it is split
    "nearly": (chapter(md("## Nearly fits"), code("show()", long_output(lines=36, width=80))), None),
    "reports": (chapter(code("table()", "the table\n"), md("### What the table says\n\nIt says so."),
                        md("## 2 · One"), md("## 2 · Two"), code("warn()", "careful\n", name="stderr")), None),
}
FAILS = {"unfittable": "overflow", "unfitted": "overflow", "network": "network", "solution": "solution",
         "reference": "solution", "placeholder": "content", "reports": "reports",
         "fine print": "text_size"}


def deck_of(nb, name, out, damage):
    shown = nb if damage == "keep-solutions" else None
    if shown is None:
        path = out / f"{name}.ipynb"
        nbformat.write(nb, path)
        return slides.export(path, out)
    slides.install_reveal(out)
    slides.annotate(nb)
    target = out / f"{name}.slides.html"
    target.write_text(slides.render(nb, name), encoding="utf-8")
    return target


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("decks")
    decks = {}
    for name, (nb, damage) in CASES.items():
        deck = deck_of(nb, name, out, damage)
        if damage == "no-fitting":
            html = deck.read_text(encoding="utf-8")
            assert "    fitDeck();\n" in html
            deck.write_text(html.replace("    fitDeck();\n", "\n"), encoding="utf-8")
        decks[name] = (deck, nb)
    known = {"reports": {}}
    return {r.notebook: r for r in slides_check.check_decks(decks, known=known)}


def test_a_sound_deck_passes_every_check(results):
    r = results["sound"]
    assert r.ok, r.lines()
    assert r.continued >= 1, "the 90-line output went on continuation slides"
    assert r.slides >= 4 and r.tables == r.visible_tables == 1
    assert r.requests == [] and r.taller == [] and r.cut_lines == 0


@pytest.mark.parametrize("name", FAILS)
def test_a_damaged_deck_fails_at_its_named_check(results, name):
    failed = {check for check, found in results[name].failures().items() if found}
    assert failed == {FAILS[name]}, results[name].lines()


def test_no_text_under_16_px_a_slide_too_tall_is_split_not_shrunk(results):
    for name in ("sound", "nearly"):
        r = results[name]
        assert r.ok and r.smallest_px == 16 and r.shrunk == 0, r.lines()
    assert results["nearly"].continued == 1
    assert results["fine print"].small == ["slide 3.1 'Fine print': 12 px"]
    assert results["fine print"].smallest_px == 12


def test_what_each_check_found(results):
    assert results["unfittable"].taller and not results["unfittable"].cut
    assert results["unfitted"].taller and results["unfitted"].cut_lines >= 90
    assert results["network"].requests == ["https://example.com/logo.png"]
    assert any("reference_" in s for s in results["reference"].solutions)
    assert any("cell 5 (tagged solution)" in s for s in results["solution"].solutions)
    assert results["reports"].reports == {
        "explanation sub-slide": ["cell 4: ### What the table says"],
        "repeated section number": ["cell 6: ## 2 · Two (also cell 5)"],
        "stderr box": ["cell 7: warn()"]}


def test_known_reports_pass_and_a_fixed_one_fails(results, tmp_path):
    nb = CASES["reports"][0]
    deck = results["reports"]
    known = {"reports": {kind: list(items) for kind, items in deck.reports.items()}}
    path = tmp_path / "reports.ipynb"
    nbformat.write(nb, path)
    decks = {"reports": (slides.export(path, tmp_path), nb)}
    (listed,) = slides_check.check_decks(decks, known=known)
    assert listed.ok, listed.lines()
    known["reports"]["stderr box"].append("cell 9: gone()")
    (stale,) = slides_check.check_decks(decks, known=known)
    assert stale.failures()["reports"] == ["fixed, remove it from known_reports.json: stderr box: cell 9: gone()"]
