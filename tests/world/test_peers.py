"""Chapter 07's peers: the stored tables hold to fixtures/peers/expected.json, and every pinned
outside client lists every course server (both eras where it supports them): the catalog and
the atlas in the chapter's own table, the other servers here.

Node.js and the peers are part of the set-up (``make test`` installs them); when they are missing
these tests fail with the commands that install them, never skip.
"""
import asyncio
import pytest

from course_lib.chapters import peers_env, peers_lab

from test_peers_unit import COURSE_SERVERS, IN_THE_CHAPTER


def test_a_missing_peer_fails_loudly_with_the_install_commands(monkeypatch, tmp_path):
    monkeypatch.setattr(peers_env, "MODULES", tmp_path)  # an empty node_modules
    with pytest.raises(peers_env.PeersMissing, match="is not installed, the course pins") as info:
        peers_env.check()
    assert "make lab (or make test) installs Node and the peers" in str(info.value)


def test_every_peer_lists_every_course_server():
    peers_lab.check()  # fails with the install commands when Node or a peer is missing

    async def all_runs():
        gate = asyncio.Semaphore(peers_lab.LIMIT)
        jobs = [(peer, era, server) for peer in peers_lab.PEERS for era in peer.eras
                for server in COURSE_SERVERS if server[0] not in IN_THE_CHAPTER]

        async def one(peer, era, server):
            name, mode, fixture, kind = server
            async with gate:
                return await peers_lab.run(peer, name, mode, era, kind, fixture=fixture)

        return jobs, await asyncio.gather(*(one(*job) for job in jobs))

    jobs, runs = asyncio.run(all_runs())
    failed = [f"{peer.label} ({era}) on {server[0]}: {run.error or 'listed nothing'}"
              for (peer, era, server), run in zip(jobs, runs) if run.error or not run.items]
    assert not failed, "\n".join(failed)
