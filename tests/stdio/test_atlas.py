"""The atlas server over real stdio, in both eras, against the hand-written oracle
fixtures/atlas/expected.json (never read from the server or its documents file)."""
import json

import mcp_types as types
import pytest
from mcp import MCPError

from course_lib import connect, walk
from course_lib.paths import fixture
from course_lib.uris import expand, is_not_found, read, sdk_1_29_uri

pytestmark = pytest.mark.anyio

EXPECTED = json.loads(fixture("atlas", "expected.json").read_text(encoding="utf-8"))
NAMES = {r["uri"]: r["name"] for r in EXPECTED["resources"]}
ROWS = EXPECTED["uri_rows"]


async def test_atlas_every_row_prompt_and_tools(era):
    code = EXPECTED["not_found"]["classic"][era]
    async with connect("atlas", era=era) as lab:
        if era == "legacy":
            caps = lab.session.server_capabilities  # from the initialize result
            assert caps.resources is not None and caps.prompts is not None and caps.tools is None
        # Listing and the template.
        listed = await walk(lab, "resources")
        assert listed.names == [r["uri"] for r in EXPECTED["resources"]]
        assert [(r.name, r.mime_type) for r in listed.items] == [(r["name"], EXPECTED["mime_type"])
                                                                 for r in EXPECTED["resources"]]
        templates = await walk(lab, "templates")
        assert templates.names == [EXPECTED["template"]]

        # The three canonical reads.
        texts = {}
        for resource in EXPECTED["resources"]:
            outcome = await read(lab.session, resource["uri"])
            assert (outcome.contents_uri, outcome.mime_type) == (resource["uri"], EXPECTED["mime_type"])
            assert resource["marker"] in outcome.text
            texts[resource["uri"]] = outcome.text

        # Every URI row, as 2.3.0 sends it (verbatim) and in the form a 1.29.0 peer produced.
        for row in ROWS:
            sent = await read(lab.session, row["uri"])
            assert sent.label(NAMES) == row["sdk_2_3_0"], row["uri"]
            if not sent.ok:
                assert (sent.code, sent.message) == (code, EXPECTED["not_found"]["message"])
            else:
                assert sent.text == texts[sent.contents_uri]
            old = await read(lab.session, sdk_1_29_uri(row["uri"]))
            assert old.label(NAMES) == row["sdk_1_29_0"], row["uri"]

        # Template expansions done right and wrong.
        for case in EXPECTED["expansions"]:
            assert (await read(lab.session, case["uri"])).label(NAMES) == case["outcome"], case["how"]

        # Prompt discovery, good prompts, embedded texts equal independent reads.
        prompts = (await lab.session.list_prompts()).prompts
        assert [p.name for p in prompts] == [EXPECTED["prompt"]["name"]]
        assert [{"name": a.name, "required": a.required} for a in prompts[0].arguments] == \
            EXPECTED["prompt"]["arguments"]
        instructions = set()
        for good in EXPECTED["prompt"]["good"]:
            result = await lab.session.get_prompt(EXPECTED["prompt"]["name"], good["arguments"])
            first, *embedded = result.messages
            assert all(m.role == "user" for m in result.messages)
            assert first.content.type == "text"
            for phrase in EXPECTED["prompt"]["instruction_must_contain"]:
                assert phrase in first.content.text
            instructions.add(first.content.text)
            assert [m.content.type for m in embedded] == ["resource"] * len(good["embedded"])
            resources = [m.content.resource for m in embedded]
            assert [NAMES[r.uri] for r in resources] == good["embedded"]
            assert all(r.mime_type == EXPECTED["mime_type"] and r.text == texts[r.uri] for r in resources)
        assert len(instructions) == 2  # the focus changes the instruction

        for bad in EXPECTED["prompt"]["bad"]:
            with pytest.raises(MCPError) as caught:
                await lab.session.get_prompt(bad["name"], bad["arguments"])
            assert (caught.value.error.code, caught.value.error.message) == \
                (EXPECTED["prompt"]["error_code"], bad["message"]), bad

        with pytest.raises(MCPError) as caught:
            await lab.session.list_tools()
        assert (caught.value.error.code, caught.value.error.message) == \
            (EXPECTED["tools_list"]["code"], EXPECTED["tools_list"]["message"])

    # The handler saw every URI verbatim: the server's own trace, read back after exit.
    seen = [r["uri"] for r in json.loads(lab.file("audit.json"))["requests"]]
    sent_uris = ([r["uri"] for r in EXPECTED["resources"]]
                 + [u for row in ROWS for u in (row["uri"], row["anyurl_1_29_0"])]
                 + [c["uri"] for c in EXPECTED["expansions"]])
    assert seen == sent_uris
    assert lab.stderr == "" and lab.noise == []
    # On the wire the not-found answer is the era's JSON-RPC error (-32002, then -32602), data.uri in both.
    errors = [f.message["error"] for f in lab.wire if f.direction == "←" and f.kind == "error"]
    assert {"code": code, "message": "Resource not found", "data": {"uri": "file:///etc/passwd"}} in errors


async def test_sep_2164_mode_answers_invalid_params_with_data_uri(era):
    async with connect("atlas", mode="sep-2164", era=era) as lab:
        for row in ROWS:
            try:
                result = await lab.session.read_resource(row["uri"])
            except MCPError as exc:
                assert row["sdk_2_3_0"] == "not-found", row["uri"]
                assert exc.error.code == EXPECTED["not_found"]["sep-2164"][era] == types.INVALID_PARAMS
                assert exc.error.data == {"uri": row["uri"]}
                assert is_not_found(exc)
            else:
                assert row["sdk_2_3_0"] == f"ok:{NAMES[result.contents[0].uri]}", row["uri"]


async def test_documents_are_data(tmp_path):
    """The same server serves another documents file: names, URIs and the template come from data."""
    source = json.loads(fixture("atlas", "documents.json").read_text(encoding="utf-8"))
    source["base"] = "project://other/notes/"
    source["template"]["uriTemplate"] = "project://other/notes/{name}"
    source["documents"] = {"a/b c": "only one note\n"}
    path = tmp_path / "documents.json"
    path.write_text(json.dumps(source), encoding="utf-8")
    async with connect("atlas", fixture=path) as lab:
        assert (await walk(lab, "resources")).names == ["project://other/notes/a%2Fb%20c"]
        assert (await walk(lab, "templates")).names == ["project://other/notes/{name}"]
        assert (await read(lab.session, expand("project://other/notes/{name}", name="a/b c"))).text == "only one note\n"
        assert (await read(lab.session, "project://other/notes/a/b c")).not_found
