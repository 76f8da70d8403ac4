"""The README fits on a screen or two and says where to start; the pages in docs/ are generated.

``docs/modules.md`` and ``docs/source-articles.md`` are written by ``make docs``
(``course_lib.tooling.docs``); a committed page that differs from what the generator writes fails
here, and so does a generator that loses a module or an item.
"""
import re

from course_lib.paths import NOTEBOOKS, ROOT
from course_lib.tooling import docs

README = (ROOT / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_committed_pages_are_what_the_generator_writes():
    assert docs.stale() == [], "run `make docs` and commit docs/"


def test_a_changed_page_is_reported_stale(tmp_path):
    docs.write(tmp_path)
    assert docs.stale(tmp_path) == []
    page = tmp_path / "modules.md"
    page.write_text(page.read_text(encoding="utf-8").replace("| `walker` |", "| `walk` |"), encoding="utf-8")
    (tmp_path / "source-articles.md").unlink()
    assert docs.stale(tmp_path) == ["modules.md", "source-articles.md"]
    assert docs.main(["--check"]) == 0  # the committed pages themselves


def test_the_module_guide_has_every_module_with_its_docstring():
    page = docs.modules_page()
    modules = sorted(p for p in (ROOT / "course_lib").rglob("*.py")
                     if p.name not in ("__init__.py", "__main__.py"))
    assert len(modules) > 40
    for path in modules:
        first = docs.summary(path)
        assert first, f"{path.relative_to(ROOT)} has no docstring for the module guide"
        assert f"| `{path.stem}` | {first.replace('|', chr(92) + '|')} |" in page, path
    assert page.count("\n| `") == len(modules), "a module is listed twice or a row is not a module"


def test_the_source_article_page_has_every_item_once():
    page = docs.source_articles_page()
    items = docs.seed_items()
    rows = [line for line in page.splitlines() if re.match(r"\| 0[123] \| ", line)]
    assert len(rows) == len(items) > 100
    assert all(x["item"].replace("|", "\\|") in row for x, row in zip(items, rows))


def test_the_readme_fits_on_a_screen_or_two():
    assert len(README.encode("utf-8")) <= 10_000
    assert "| article | item |" not in README and "| module |" not in README, "tables live in docs/"
    for page in ("docs/modules.md", "docs/source-articles.md"):
        assert f"]({page})" in README and (ROOT / page).exists(), page


def test_the_readme_gives_the_two_commands_and_the_platforms():
    commands = section("Two commands")
    assert re.search(r"^make lab ", commands, re.M) and re.search(r"^make test ", commands, re.M)
    platforms = section("Supported platforms")
    for needed in ("Linux", "macOS", "WSL2", "3.11", "PYTHON=python3.12"):
        assert needed in platforms, needed


def test_the_chapter_map_is_one_line_per_chapter_in_order():
    listed = re.findall(r"^- `(\d\d_\w+)`", section("Chapters"), re.M)
    assert listed == sorted(p.stem for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    lines = [line for line in section("Chapters").splitlines() if line.startswith("- `")]
    assert all(len(line) <= 100 for line in lines), "one short line a chapter"


def test_the_readme_says_where_to_get_help():
    assert "notebooks/TROUBLESHOOTING.md" in section("When something fails")
    assert (NOTEBOOKS / "TROUBLESHOOTING.md").exists()
