"""The chapters' back ends: what a chapter runs behind its cells, not the API students reuse.

``schema_lab`` (the schema-cache scenarios and their probes), ``schema_oracles`` (their fixed
oracles and the exact comparison), ``schema_mutants`` (the known-wrong edits the probes must catch),
``snapshot_lab`` (the snapshot chapter's labs), ``snapshot_controls`` (its five wrong servers),
``envelope_controls`` (damaged-reply replays for the strict line client),
``negative_controls`` (known-wrong edits of the course run in a temporary copy, made and run by
``course_copy``), ``peers_lab`` (the pinned outside clients of chapter 07) and ``peer_tap`` (the
wire tap they talk through).
"""
