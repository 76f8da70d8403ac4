"""The chapter's FastMCP server: five pure tools, three notes, a template and a prompt.

Runs in ``.venv-servers`` (FastMCP is pinned there). ``--page-size N`` passes ``list_page_size=N``:
only then does FastMCP paginate. No tool touches a file or the network; start it with
``FASTMCP_CHECK_FOR_UPDATES=off`` (the chapter always does), or its start-up asks the package
registry for a newer version.

    python fastmcp_server.py [--page-size N]
"""
import argparse

from fastmcp import FastMCP

parser = argparse.ArgumentParser()
parser.add_argument("--page-size", type=int, default=None)
page_size = parser.parse_args().page_size

mcp = FastMCP("course-fastmcp", list_page_size=page_size)


@mcp.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool
def upper(text: str) -> str:
    """The text in upper case."""
    return text.upper()


@mcp.tool
def word_count(text: str) -> int:
    """How many words the text has."""
    return len(text.split())


@mcp.tool
def reverse(text: str) -> str:
    """The text backwards."""
    return text[::-1]


@mcp.tool
def is_even(n: int) -> bool:
    """Whether n is even."""
    return n % 2 == 0


NOTES = {"welcome": "Welcome to the course.", "pagination": "Walk every page.",
         "cursors": "Send a cursor back verbatim."}


@mcp.resource("notes://welcome")
def welcome() -> str:
    return NOTES["welcome"]


@mcp.resource("notes://pagination")
def pagination() -> str:
    return NOTES["pagination"]


@mcp.resource("notes://cursors")
def cursors() -> str:
    return NOTES["cursors"]


@mcp.resource("notes://{name}/upper")
def note_upper(name: str) -> str:
    """A note in upper case."""
    return NOTES[name].upper()


@mcp.prompt
def summarise(text: str) -> str:
    """Ask for a one-line summary."""
    return f"Summarise in one line: {text}"


if __name__ == "__main__":
    mcp.run(transport="stdio", show_banner=False)
