"""The walker's rules at their exact boundaries, on in-process SDK servers (no subprocess).

Every page set and every expected catalog or error below is written by hand.
"""
import pytest

from course_lib import CatalogError, walk
from memory_server import memory_lab, paged

pytestmark = pytest.mark.anyio

THREE_PAGES = {None: (["alpha", "beta"], "p2"), "p2": (["gamma"], "p3"), "p3": (["delta"], None)}


async def walk_pages(pages, **limits):
    async with memory_lab(paged(pages)) as lab:
        try:
            return await walk(lab, **limits), lab
        except CatalogError as exc:
            return exc, lab


async def test_a_complete_walk_sends_every_cursor_back():
    catalog, lab = await walk_pages(THREE_PAGES)
    assert catalog.names == ["alpha", "beta", "gamma", "delta"]
    assert catalog.page_sizes == (2, 1, 1) and catalog.pages == 3
    assert lab.cursors_sent() == [None, "p2", "p3"]


async def test_page_budget_n_is_enough_and_n_minus_one_is_not():
    catalog, _ = await walk_pages(THREE_PAGES, max_pages=3)
    assert catalog.names == ["alpha", "beta", "gamma", "delta"]
    error, lab = await walk_pages(THREE_PAGES, max_pages=2)
    assert (error.reason, str(error), error.details["limit"]) == ("page_budget", "no last page within 2 pages", 2)
    assert lab.cursors_sent() == [None, "p2"]  # the third page was never asked for


async def test_item_budget_n_is_enough_and_n_minus_one_is_not():
    catalog, _ = await walk_pages(THREE_PAGES, max_items=4)
    assert len(catalog.items) == 4
    error, lab = await walk_pages(THREE_PAGES, max_items=3)
    assert (error.reason, str(error)) == ("item_budget", "more than 3 tools after 3 pages")
    error, _ = await walk_pages(THREE_PAGES, max_items=1)
    assert str(error) == "more than 1 tools after 1 pages"  # a page is refused before its first entry


async def test_an_empty_catalog_fits_an_item_budget_of_zero():
    catalog, _ = await walk_pages({None: ([], None)}, max_items=0)
    assert (catalog.names, catalog.page_sizes) == ([], (0,))


async def test_an_empty_string_is_a_cursor_not_the_end():
    catalog, lab = await walk_pages({None: (["alpha"], ""), "": (["beta"], None)})
    assert catalog.names == ["alpha", "beta"]
    assert lab.cursors_sent() == [None, ""]


async def test_an_empty_middle_page_is_not_the_end():
    catalog, _ = await walk_pages({None: (["alpha"], "p2"), "p2": ([], "p3"), "p3": (["beta"], None)})
    assert (catalog.names, catalog.page_sizes) == (["alpha", "beta"], (1, 0, 1))


async def test_a_repeated_cursor_stops_the_walk_at_the_page_that_repeats_it():
    error, lab = await walk_pages({None: (["alpha"], "same"), "same": (["beta"], "same")})
    assert (error.reason, error.details["page"]) == ("cursor_repeated", 2)
    assert str(error) == "the server sent a cursor it had already sent (page 2)"
    assert lab.cursors_sent() == [None, "same"]


async def test_a_cycle_is_a_repeat_however_long_it_is():
    cycle = {None: (["alpha"], "a"), "a": (["beta"], "b"), "b": (["gamma"], "a")}
    error, lab = await walk_pages(cycle)
    assert (error.reason, error.details["page"]) == ("cursor_repeated", 3)
    assert lab.cursors_sent() == [None, "a", "b"]


async def test_an_endless_catalog_meets_the_page_budget():
    error, lab = await walk_pages({None: (["t0"], "c1"), **{f"c{i}": ([f"t{i}"], f"c{i + 1}") for i in range(1, 9)}},
                                  max_pages=4)
    assert error.reason == "page_budget" and len(lab.cursors_sent()) == 4


@pytest.mark.parametrize("pages, name, page", [
    ({None: (["alpha", "beta"], "p2"), "p2": (["beta"], None)}, "beta", 2),  # across pages
    ({None: (["alpha", "alpha"], None)}, "alpha", 1),                         # within one page
])
async def test_a_duplicate_name_is_refused_where_it_appears(pages, name, page):
    error, _ = await walk_pages(pages)
    assert (error.reason, error.details["name"], error.details["page"]) == ("duplicate_name", name, page)
    assert str(error) == f"{name!r} appears twice (page {page})"


async def test_a_misspelled_next_cursor_is_not_read_as_the_last_page():
    misspell = lambda raw: raw.replace('"nextCursor"', '"next_cursor"')  # noqa: E731
    async with memory_lab(paged({None: (["alpha"], "p2"), "p2": (["beta"], None)}), rewrite=misspell) as lab:
        with pytest.raises(CatalogError) as caught:
            await walk(lab)
        # A bare session has no raw frames to read: the SDK drops the unknown key and the page looks last.
        assert (await walk(lab.client)).names == ["alpha"]
    assert (caught.value.reason, caught.value.details["key"]) == ("misspelled_cursor", "next_cursor")
    assert str(caught.value) == "page 1 sends 'next_cursor' instead of 'nextCursor': the catalog may be truncated"


@pytest.mark.parametrize("limits", [{"max_pages": 0}, {"max_pages": True}, {"max_pages": 2.0},
                                    {"max_items": -1}, {"max_items": False}])
async def test_invalid_limits_are_refused_before_any_request(limits):
    async with memory_lab(paged(THREE_PAGES)) as lab:
        with pytest.raises(ValueError, match="must be an integer"):
            await walk(lab, **limits)
    assert lab.wire.requests("tools/list") == []
