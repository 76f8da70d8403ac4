"""Snapshot bundles: manifest → revision-pinned reads → the prompt of the same revision.

Two reads that each succeed can still form a bundle that never existed (one file before an
edit, the other after it). ``acquire`` reads a bundle only through a manifest that fixes one
revision and the exact list of its pinned URIs, reads every pinned URI, asks for the review
prompt of the same revision and compares the prompt's embedded texts with the reads.

When the server says a snapshot is unavailable (-31001), the whole acquisition is discarded and
restarted **once** from a new manifest. A file is never patched with a ``latest/`` read, and
there is no second restart: if the new snapshot is also unavailable, the failure stands.

Every refusal is a ``BundleError`` whose ``check`` names the check that caught it:

=====================  ==================================================================
``manifest_shape``     the manifest is JSON ``{"revision": str, "uris": [str, ...]}``, nothing else
``manifest_membership`` every URI is pinned to that revision, no duplicates; exactly the
                       oracle's list (when one is given); a recovery keeps the same documents
``pinned_read``        each read returns exactly one text content for the URI asked for
``snapshot_oracle``    the texts equal the fixed oracle's texts of that revision (when given)
``prompt_shape``       the prompt is one instruction naming the revision, then embedded resources
``prompt_matches_reads`` the prompt embeds exactly the URIs and texts that were read
``recovery``           one restart at most, from a manifest that names another revision
=====================  ==================================================================
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal, Mapping

from mcp import MCPError

from course_lib.errors import CheckFailed, CourseError
from course_lib.protocol import SNAPSHOT_UNAVAILABLE

MANIFEST_URI = "project://atlas/manifest"
PINNED_PREFIX = "project://atlas/"
PROMPT = "review-snapshot"
UNAVAILABLE = SNAPSHOT_UNAVAILABLE  # what a server says of a revision it no longer holds (-31001)
TEXT_MIME = "text/plain"

CHECKS = ("manifest_shape", "manifest_membership", "pinned_read", "snapshot_oracle", "prompt_shape",
          "prompt_matches_reads", "recovery")

CacheMode = Literal["use", "refresh", "bypass"]
# The fixed oracle: revision -> {pinned URI: full text}, in manifest order.
Oracle = Mapping[str, Mapping[str, str]]


class BundleError(CheckFailed):
    """A bundle that must not be used. ``check`` names the check that refused it."""

    CHECKS = CHECKS


class SnapshotUnavailable(CourseError):
    """The server no longer holds the revision (-31001): reacquire the whole bundle."""

    reason = "snapshot_unavailable"

    def __init__(self, revision: str, where: str, message: str):
        super().__init__(f"{revision} unavailable at {where}: {message}", revision=revision, where=where)
        self.revision = revision
        self.where = where


require = BundleError.require  # refuse the bundle at the named check unless the condition holds


def short(uri: str) -> str:
    """``project://atlas/r1/design`` → ``r1/design`` (for messages and tables)."""
    return uri.removeprefix(PINNED_PREFIX)


@dataclass(frozen=True)
class Manifest:
    revision: str
    uris: tuple[str, ...]

    @property
    def documents(self) -> tuple[str, ...]:
        return tuple(u.rsplit("/", 1)[-1] for u in self.uris)


@dataclass(frozen=True)
class Attempt:
    """One pass over one manifest: its revision and how it ended (``ok`` or where it was unavailable)."""

    revision: str
    outcome: str


@dataclass
class Bundle:
    """A bundle that passed every check: one revision, its texts, and the prompt built from them."""

    revision: str
    texts: dict[str, str]
    instruction: str
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def restarts(self) -> int:
        return len(self.attempts) - 1


def parse_manifest(text: str) -> Manifest:
    try:
        data = json.loads(text)
    except ValueError:
        raise BundleError("manifest_shape", "the manifest is not JSON") from None
    require(isinstance(data, dict) and set(data) == {"revision", "uris"}, "manifest_shape",
            f"the manifest must have exactly the keys revision and uris, got {sorted(data) if isinstance(data, dict) else type(data).__name__}")
    revision, uris = data["revision"], data["uris"]
    require(isinstance(revision, str) and revision, "manifest_shape", "revision must be a non-empty string")
    require(isinstance(uris, list) and uris and all(isinstance(u, str) for u in uris), "manifest_shape",
            "uris must be a non-empty list of strings")
    return Manifest(revision, tuple(uris))


def check_membership(manifest: Manifest, oracle: Oracle | None = None, previous: Manifest | None = None) -> None:
    """The manifest lists exactly the pinned URIs of its revision."""
    rev = manifest.revision
    prefix = f"{PINNED_PREFIX}{rev}/"
    stray = [short(u) for u in manifest.uris if not u.startswith(prefix) or "/" in u.removeprefix(prefix)]
    require(not stray, "manifest_membership", f"{', '.join(stray)} not pinned to {rev}")
    require(len(set(manifest.uris)) == len(manifest.uris), "manifest_membership", f"{rev} lists a URI twice")
    if oracle is not None:
        require(rev in oracle, "manifest_membership", f"unknown revision {rev!r}")
        expected = list(oracle[rev])
        require(list(manifest.uris) == expected, "manifest_membership",
                f"{rev} lists {[short(u) for u in manifest.uris]}, the oracle {[short(u) for u in expected]}")
    if previous is not None:
        require(manifest.documents == previous.documents, "manifest_membership",
                f"{rev} covers {list(manifest.documents)}, the abandoned {previous.revision} {list(previous.documents)}")


async def read_manifest(lab, cache_mode: CacheMode = "refresh") -> Manifest:
    result = await lab.client.read_resource(MANIFEST_URI, cache_mode=cache_mode)
    require(len(result.contents) == 1 and getattr(result.contents[0], "text", None) is not None,
            "manifest_shape", "the manifest must be exactly one text content")
    return parse_manifest(result.contents[0].text)


async def read_pinned(lab, manifest: Manifest, cache_mode: CacheMode = "refresh") -> dict[str, str]:
    """Every pinned URI of the manifest, in order; -31001 becomes ``SnapshotUnavailable``."""
    texts: dict[str, str] = {}
    for uri in manifest.uris:
        try:
            result = await lab.client.read_resource(uri, cache_mode=cache_mode)
        except MCPError as exc:
            if exc.error.code == UNAVAILABLE:
                raise SnapshotUnavailable(manifest.revision, short(uri), exc.error.message) from None
            raise BundleError("pinned_read", f"{short(uri)}: MCPError {exc.error.code}: {exc.error.message}") from None
        items = result.contents
        require(len(items) == 1, "pinned_read", f"{short(uri)} returned {len(items)} contents")
        item = items[0]
        require(item.uri == uri, "pinned_read", f"asked for {short(uri)}, got {short(item.uri)}")
        require(getattr(item, "text", None) is not None and item.mime_type == TEXT_MIME, "pinned_read",
                f"{short(uri)} is not {TEXT_MIME} text")
        texts[uri] = item.text
    return texts


def check_oracle(revision: str, texts: Mapping[str, str], oracle: Oracle) -> None:
    """The whole snapshot equals the fixed oracle of its revision, text for text."""
    expected = oracle[revision]
    wrong = [short(u) for u in expected if texts.get(u) != expected[u]]
    require(not wrong and dict(texts) == dict(expected), "snapshot_oracle",
            f"{', '.join(wrong) or 'the URI set'} differs from the fixed {revision} text")


async def review_prompt(lab, revision: str) -> tuple[str, dict[str, str]]:
    """The prompt of ``revision``: (instruction, {embedded URI: text}); -31001 → ``SnapshotUnavailable``."""
    try:
        result = await lab.client.get_prompt(PROMPT, {"revision": revision})
    except MCPError as exc:
        if exc.error.code == UNAVAILABLE:
            raise SnapshotUnavailable(revision, "prompt", exc.error.message) from None
        raise BundleError("prompt_shape", f"MCPError {exc.error.code}: {exc.error.message}") from None
    messages = result.messages
    require(len(messages) >= 2 and all(m.role == "user" for m in messages), "prompt_shape",
            "expected user messages: an instruction, then the documents")
    first, rest = messages[0].content, [m.content for m in messages[1:]]
    require(first.type == "text" and all(c.type == "resource" for c in rest), "prompt_shape",
            "expected one text instruction followed by embedded resources")
    require(first.text == f"Review only this snapshot: {revision}", "prompt_shape",
            f"asked for {revision}, the instruction says {first.text!r}")
    embedded: dict[str, str] = {}
    for content in rest:
        resource = content.resource
        require(getattr(resource, "text", None) is not None and resource.mime_type == TEXT_MIME, "prompt_shape",
                f"{short(resource.uri)} is not embedded as {TEXT_MIME} text")
        embedded[resource.uri] = resource.text
    return first.text, embedded


async def verify(lab, manifest: Manifest, *, oracle: Oracle | None = None, previous: Manifest | None = None,
                 cache_mode: CacheMode = "refresh") -> Bundle:
    """One pass over one manifest: membership, pinned reads, oracle, the prompt of the same revision."""
    check_membership(manifest, oracle, previous)
    texts = await read_pinned(lab, manifest, cache_mode)
    if oracle is not None:
        check_oracle(manifest.revision, texts, oracle)
    instruction, embedded = await review_prompt(lab, manifest.revision)
    if embedded != texts:
        differ = sorted(set(embedded) ^ set(texts)) or [u for u in texts if embedded[u] != texts[u]]
        raise BundleError("prompt_matches_reads",
                          f"the {manifest.revision} prompt embeds other texts than were read: {', '.join(map(short, differ))}")
    return Bundle(manifest.revision, texts, instruction, [Attempt(manifest.revision, "ok")])


async def acquire(lab, *, oracle: Oracle | None = None, manifest: Manifest | None = None,
                  cache_mode: CacheMode = "refresh") -> Bundle:
    """A complete, consistent bundle, or a ``BundleError``; at most one whole-bundle restart.

    ``manifest`` starts from a manifest read earlier instead of reading a new one.
    ``cache_mode`` is passed to every read: the default ``"refresh"`` always asks the server
    (and updates the client's response cache), because a cached manifest or a cached pinned
    text can hide that the revision has moved on or expired.
    """
    first = manifest or await read_manifest(lab, cache_mode)
    try:
        return await verify(lab, first, oracle=oracle, cache_mode=cache_mode)
    except SnapshotUnavailable as gone:
        abandoned = Attempt(first.revision, f"unavailable at {gone.where}")
    # Discard everything read from the first manifest and start over, once, from a new one.
    second = await read_manifest(lab, cache_mode)
    require(second.revision != first.revision, "recovery",
            f"the new manifest names {second.revision} again, which the server no longer holds")
    try:
        bundle = await verify(lab, second, oracle=oracle, previous=first, cache_mode=cache_mode)
    except SnapshotUnavailable as gone:
        raise BundleError("recovery", f"{second.revision} also unavailable (at {gone.where}); no second restart") from None
    bundle.attempts.insert(0, abandoned)
    return bundle
