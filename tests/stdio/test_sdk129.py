"""The SDK 1.29.0 peer: a real second environment, pinned, and what it does with URIs.

The expectations come from ``fixtures/atlas/expected.json`` (hand-written ``sdk_1_29_0`` and
``anyurl_1_29_0`` columns); nothing here is derived from the peer's own answers.
"""
from __future__ import annotations

import json
import subprocess

import anyio

from course_lib import sdk129
from course_lib.errors import unwrap
from course_lib.labs import connect
from course_lib.paths import FIXTURES

ROWS = json.loads((FIXTURES / "atlas" / "expected.json").read_text())["uri_rows"]


def test_the_peer_runs_sdk_1_29_0():
    out = subprocess.run([str(sdk129.python()), "-c",
                          "import importlib.metadata as m; print(m.version('mcp'))"],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == sdk129.VERSION == "1.29.0"


def outcome(ok: bool, text: str | None, documents: dict) -> str:
    if not ok:
        return "not-found"
    return "ok:" + next(name for name, body in documents.items() if body == text)


DOCS = json.loads((FIXTURES / "atlas" / "documents.json").read_text())["documents"]


def test_a_2_3_0_client_reading_the_1_29_0_server_gets_the_normalised_answers():
    async def main():
        seen = {}
        async with connect(sdk129.server_argv("atlas")) as lab:
            for row in ROWS:
                try:
                    result = await lab.session.read_resource(row["uri"])
                except Exception as exc:  # noqa: BLE001 - the outcome is what is compared
                    seen[row["uri"]] = ("not-found", type(unwrap(exc)).__name__)
                else:
                    c = result.contents[0]
                    seen[row["uri"]] = (outcome(True, c.text, DOCS), c.uri)
        return seen

    seen = anyio.run(main)
    for row in ROWS:
        got, detail = seen[row["uri"]]
        assert got == row["sdk_1_29_0"], (row["uri"], got, detail)
        if got.startswith("ok:"):
            assert detail == row["anyurl_1_29_0"], (row["uri"], detail)


def test_a_1_29_0_client_normalises_before_the_2_3_0_server_sees_the_uri():
    ops = [{"op": "read_resource", "uri": row["uri"]} for row in ROWS]
    results = anyio.run(lambda: sdk129.client("atlas", ops))
    assert results[-1] == {"op": "session", "noise": []}
    for row, res in zip(ROWS, results):
        text = res["result"]["contents"][0]["text"] if res["ok"] else None
        assert outcome(res["ok"], text, DOCS) == row["sdk_1_29_0"], (row["uri"], res["error"])
