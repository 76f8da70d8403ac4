"""URIs: every listed resource read under its own URI, odd spellings of a few, templates, a missing URI.

The canonical read must come back under the same URI. Each odd spelling (a percent-encoded
character, ``./`` and ``../`` segments, a query, a fragment, a trailing ``/``, an upper-case
scheme) is either refused or, where the server normalises it, "served as canonical" (the same
contents as the canonical read): both are reported, neither fails. Only contents that differ
from the canonical read are a warning. A URI that cannot exist gets a not-found answer, and the
line names the code the server used (``course_lib.uris.not_found``).
"""
from __future__ import annotations

import re

from course_lib.audit.session import Context, Work, describe_error, error_of, in_sessions
from course_lib.uris import expand, judge_missing, not_found

MAX_CANONICAL = 200  # resources read under their own URI
MAX_SPELLED = 3  # resources whose URI is also read in every odd spelling
MAX_TEMPLATES = 5
CANONICAL = "SHOULD (course: a read answers under the URI asked for)"
SPELLING = "SHOULD (spec: resources, URIs are exact)"
NOT_FOUND = "SHOULD (spec: resources, error handling)"
NOT_FOUND_RETIRED = "MUST NOT (spec 2026-07-28: -32002 is retired; not-found is -32602)"
MISSING_PATH = "course-audit-missing/no-such-resource"


def spellings(uri: str) -> dict[str, str]:
    """The odd spellings of ``uri`` the audit tries (those that differ from it)."""
    scheme, sep, rest = uri.partition("://")
    if not sep:
        scheme, sep, rest = uri.partition(":")
    head, slash, last = rest.rpartition("/")
    prefix = f"{scheme}{sep}{head}{slash}"
    out = {}
    letter = re.search(r"[A-Za-z0-9]", last)
    if letter:
        i = letter.start()
        out["percent"] = prefix + last[:i] + f"%{ord(last[i]):02X}" + last[i + 1:]
    if slash:
        out["dot-segment"] = f"{prefix}./{last}"
        out["dotdot-segment"] = f"{prefix}course-audit/../{last}"
    out["query"] = f"{uri}?course-audit=1"
    out["fragment"] = f"{uri}#course-audit"
    if not uri.endswith("/"):
        out["trailing-slash"] = f"{uri}/"
    if scheme.upper() != scheme:
        out["upper-scheme"] = scheme.upper() + uri[len(scheme):]
    return {name: value for name, value in out.items() if value != uri}


def _contents(reply: dict) -> list:
    result = reply.get("result") or {}
    return [(c.get("uri"), c.get("text"), c.get("blob")) for c in result.get("contents") or [] if isinstance(c, dict)]


async def read_canonical(wire, resources: list[dict], era: str, report) -> dict[str, list]:
    """Read each listed resource by its URI on ``wire``; the ``uri.canonical`` lines go to ``report``."""
    read: dict[str, list] = {}
    moved, refused = [], []
    for item in resources[:MAX_CANONICAL]:
        uri = item.get("uri")
        reply = await wire.request("resources/read", {"uri": uri})
        if error_of(reply) is not None:
            refused.append(f"{uri}: {describe_error(error_of(reply))}")
            continue
        read[uri] = _contents(reply)
        if not read[uri] or read[uri][0][0] != uri:
            moved.append(f"{uri} came back as {read[uri][0][0] if read[uri] else 'no contents'}")
    tried = min(len(resources), MAX_CANONICAL)
    if refused:
        report.add("uri.canonical", "WARN", CANONICAL, era, f"{len(refused)} of {tried} listed resources refused: "
                   f"{refused[0]}", "resources")
    elif moved:
        report.add("uri.canonical", "WARN", CANONICAL, era, f"{len(moved)} of {tried}: {moved[0]}", "resources")
    else:
        report.add("uri.canonical", "PASS", CANONICAL, era,
                   f"{tried} listed resource{'s' * (tried != 1)} read back under their own URI", "resources")
    return read


async def read_spellings(wire, read: dict[str, list], era: str, report) -> None:
    """Read the odd spellings of each URI of ``read``; the ``uri.spelling`` lines go to ``report``."""
    tally: dict[str, dict[str, list[str]]] = {}
    for uri in list(read)[:MAX_SPELLED]:
        for name, spelled in spellings(uri).items():
            reply = await wire.request("resources/read", {"uri": spelled})
            error = error_of(reply)
            if error is not None:
                group = f"refused ({error.get('code')})"
            else:
                same = [(c[1], c[2]) for c in _contents(reply)] == [(c[1], c[2]) for c in read[uri]]
                group = "served as canonical" if same else "served other contents"
            tally.setdefault(name, {}).setdefault(group, []).append(spelled)
    for name, groups in tally.items():
        summary = "; ".join(f"{len(uris)} {group}" for group, uris in sorted(groups.items()))
        verdict = ("WARN" if "served other contents" in groups else
                   "INFO" if "served as canonical" in groups else "PASS")
        report.add("uri.spelling", verdict, SPELLING, era, summary, name)


def matches(template: str, uri: str) -> bool:
    """Whether the URI template (``{name}``, ``{+name}``, ``{/name}``…) could expand to ``uri``."""
    pattern = "".join(".*" if part.startswith("{") else re.escape(part)
                      for part in re.split(r"(\{[^}]*\})", template) if part)
    return re.fullmatch(pattern, uri) is not None


async def read_missing(wire, scheme_of: str, templates: list[str], era: str, report) -> None:
    """Read a URI of ``scheme_of``'s scheme that names nothing; the ``uri.missing`` line goes to ``report``."""
    scheme = scheme_of.partition(":")[0] or "file"
    uri = f"{scheme}://{MISSING_PATH}"
    reply = await wire.request("resources/read", {"uri": uri})
    error = error_of(reply)
    if error is None:
        said = ", ".join(repr(c[1] if c[1] is not None else "(blob)")[:40] for c in _contents(reply)[:2]) or "no contents"
        match = next((t for t in templates if matches(t, uri)), None)
        if match is not None:
            report.add("uri.missing", "INFO", NOT_FOUND, era, f"{uri} was served: {said} (the template {match} "
                       "matches it)", "resources")
        else:
            report.add("uri.missing", "WARN", NOT_FOUND, era, f"{uri} was served: {said}, though "
                       f"{'no template of ' + str(len(templates)) if templates else 'no template'} matches it: "
                       "a client cannot tell a missing resource from an empty one", "resources")
        return
    answer = not_found(error)
    if answer.recognisable and judge_missing(error, era) is not None:  # the course's one rule: -32002 at 2026-07-28
        report.add("uri.missing", "FAIL", NOT_FOUND_RETIRED, era, f"code {answer.code} ({answer.kind}): "
                   f"{judge_missing(error, era)}", "resources")
    elif answer.recognisable:
        report.add("uri.missing", "PASS", NOT_FOUND, era, f"not found: code {answer.code} ({answer.kind})", "resources")
    else:
        report.add("uri.missing", "WARN", NOT_FOUND, era, f"code {answer.code} ({answer.kind}): not recognisable "
                   f"as not-found without reading the message: {describe_error(error)}", "resources")


async def _templates(wire, templates: list[dict], era: str, report) -> None:
    for item in templates[:MAX_TEMPLATES]:
        template = item.get("uriTemplate") or ""
        names = re.findall(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", template)
        if not names or re.search(r"\{[^A-Za-z_]", template):
            report.add("uri.template", "INFO", SPELLING, era, "not probed: not a simple {name} template", template)
            continue
        uri = expand(template, **{n: "course-audit" for n in names})
        reply = await wire.request("resources/read", {"uri": uri})
        error = error_of(reply)
        said = (f"served {len(_contents(reply))} content item(s)" if error is None else
                f"code {error.get('code')} ({not_found(error).kind})")
        report.add("uri.template", "INFO", SPELLING, era, f"{uri}: {said}", template[:40])


def work(ctx: Context, era: str) -> Work | None:
    """The URI probe of ``era`` (None: no resource list was read)."""
    listings = ctx.lists.get(era, {})
    resources = listings.get("resources")
    templates = listings.get("templates")
    if resources is None or not resources.complete:
        return None

    async def body(wire, report) -> None:
        read = await read_canonical(wire, resources.items, era, report)
        await read_spellings(wire, read, era, report)
        if templates is not None and templates.complete:
            await _templates(wire, templates.items, era, report)
        sample = (resources.items[0].get("uri") if resources.items else
                  (templates.items[0].get("uriTemplate") if templates and templates.items else "file:"))
        patterns = [t.get("uriTemplate") or "" for t in templates.items] if templates is not None else []
        await read_missing(wire, sample or "file:", patterns, era, report)

    return Work("uris", body)


async def run(ctx: Context, era: str, report) -> None:
    await in_sessions(ctx, era, report, [work(ctx, era)])
