"""The atlas documents served the SDK 1.29.0 way (run only by the 1.29.0 interpreter, ``.venv-sdk129``).

The same documents and the same exact allowlist as ``course_lib/servers/atlas.py``, written with
1.29.0's low-level ``Server`` and its decorators. The one difference the course measures: in
1.29.0 ``ReadResourceRequestParams.uri`` is a pydantic ``AnyUrl``, so the request is parsed, and
normalised, before the handler sees it. The handler compares ``str(uri)`` with the allowlist and
the result echoes the URI as the handler saw it (1.29.0 fills ``contents[].uri`` from it).

Usage: ``.venv-sdk129/bin/python atlas.py [documents.json]``; stdlib and mcp 1.29.0 only.
"""
import json
import sys
from pathlib import Path
from urllib.parse import quote

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import McpError

DOCUMENTS = Path(__file__).resolve().parents[2] / "fixtures" / "atlas" / "documents.json"
RESOURCE_NOT_FOUND = -32002


def main(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    allowlist = {data["base"] + quote(name, safe=""): name for name in data["documents"]}
    server = Server(data["server"] + "-sdk-1.29.0", version=data["version"])

    @server.list_resources()
    async def list_resources() -> list[types.Resource]:
        return [types.Resource(uri=uri, name=name, mimeType=data["mime_type"])
                for uri, name in allowlist.items()]

    @server.list_resource_templates()
    async def list_resource_templates() -> list[types.ResourceTemplate]:
        t = data["template"]
        return [types.ResourceTemplate(uriTemplate=t["uriTemplate"], name=t["name"],
                                       description=t["description"], mimeType=data["mime_type"])]

    @server.read_resource()
    async def read_resource(uri) -> list[ReadResourceContents]:
        name = allowlist.get(str(uri))  # exact string match, on what 1.29.0 parsed
        if name is None:
            raise McpError(types.ErrorData(code=RESOURCE_NOT_FOUND, message="Resource not found",
                                           data={"uri": str(uri)}))
        return [ReadResourceContents(content=data["documents"][name], mime_type=data["mime_type"])]

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DOCUMENTS)
