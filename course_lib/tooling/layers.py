"""The suite's three layers, given to every test in one place (no test file carries a marker).

``notebook``: every nbval cell of a chapter. ``inprocess``: a test file ending in ``_unit.py``,
a file listed in ``INPROCESS`` with ``ALL``, or a test function listed by name under its file:
no server, no process, nothing but this interpreter. ``stdio``: everything else (real servers
over real stdio, real child interpreters, JupyterLab). ``pytest -m inprocess`` is ``make check``.

The list is kept by hand, and held to what it claims: while an ``inprocess`` test (and its
fixtures) runs, an audit hook watches for a started process (``subprocess.Popen``, ``os.fork``,
``os.posix_spawn``, ``os.system``, ``os.exec*``) or a fork request to the fast launcher's fork
server (``socket.sendmsg``), and the test fails naming it. A test listed here that is renamed
simply falls back to ``stdio``.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

LAYERS = {
    "inprocess": "no server and no process: the fast layer (make check)",
    "stdio": "real servers over real stdio, child interpreters or JupyterLab",
    "notebook": "a chapter's cell under strict nbval",
}
ALL = None  # every test of the file
INPROCESS: dict[str, frozenset[str] | None] = {
    "tests/test_chapters_call_the_sdk.py": ALL,
    "tests/test_docs.py": ALL,
    "tests/test_presentation.py": ALL,
    "tests/test_seed_items.py": ALL,
    "tests/test_slides.py": ALL,
    # files that also start servers: their in-process tests by name
    "tests/test_atlas.py": frozenset({
        "test_expand_encodes_one_segment", "test_is_not_found_accepts_both_codes_only",
        "test_oracle_has_the_seventeen_rows", "test_pydantic_anyurl_gives_the_1_29_form",
    }),
    "tests/test_atlas_allowlist.py": frozenset({
        "test_every_row_on_the_chapters_reference_check", "test_rows_cover_every_rule_once_per_name",
        "test_the_cell_written_handler_agrees_with_the_atlas_server",
        "test_the_four_version_pairings_match_the_hand_written_columns",
    }),
    "tests/test_bundles.py": frozenset({
        "test_every_named_check_and_every_reader_fault_has_a_row",
    }),
    "tests/test_environment.py": frozenset({
        "test_drift_check_catches_a_drifted_yml", "test_environment_structure",
        "test_every_pin_is_exact_and_locked", "test_node_wheel_is_a_pinned_dependency",
        "test_peers_are_pinned_exactly_and_locked", "test_pins_match_pyproject",
        "test_python_version_satisfies_requires_python",
        "test_the_hub_and_its_proxy_are_pinned_exactly_and_locked",
    }),
    "tests/test_exercises.py": frozenset({
        "test_the_checks_stored_card_is_the_starters_zero", "test_the_exercise_follows_the_convention",
    }),
    "tests/test_fastlaunch.py": frozenset({
        "test_a_missing_server_fails_before_any_fork",
        "test_closing_a_pipe_another_task_waits_on_leaves_no_stale_wait_behind",
    }),
    "tests/test_classroom.py": frozenset({
        "test_a_machine_that_cannot_serve_a_class_is_told_so_before_anything_happens",
        "test_a_roster_is_one_name_a_line_and_a_bad_one_is_refused_by_line",
        "test_the_class_progress_table_has_a_row_per_student_and_a_column_per_exercise",
        "test_the_hub_listens_on_loopback_only_and_students_servers_stop_when_idle",
    }),
    "tests/test_binder.py": frozenset({
        "test_binders_environment_is_the_conda_route_less_the_editable_install",
        "test_postbuild_runs_the_set_ups_install_steps_and_environment_yml_lists_them",
        "test_the_binder_badge_opens_the_student_copy_at_chapter_00",
        "test_the_devcontainer_runs_the_set_up_and_forwards_jupyterlab",
        "test_the_kubernetes_image_and_values_follow_the_tested_set_up",
        "test_the_readme_counts_the_install_commands_environment_yml_lists",
    }),
    "tests/test_instructor_view.py": frozenset({
        "test_the_instructor_view_serves_a_scratch_copy_with_its_own_workspace_and_no_autosave",
    }),
    "tests/test_grading_allowlist.py": frozenset({
        "test_a_check_that_never_returns_is_stopped_within_the_budget",
    }),
    "tests/test_grading_bundle_reader.py": frozenset({
        "test_no_legacy_row_hints_at_a_2026_07_28_setting", "test_unknown_scenario_is_a_clear_error",
    }),
    "tests/test_grading_core.py": frozenset({
        "test_every_row_of_the_battery_states_its_requests_and_refusal",
        "test_unknown_scenario_is_a_clear_error",
    }),
    "tests/test_grading_envelope_checker.py": frozenset({
        "test_a_checker_without_readable_source_is_told_so",
        "test_the_module_carries_what_the_checker_uses",
    }),
    "tests/test_grading_paging_server.py": frozenset({
        "test_tamper_changes_the_last_letter_or_digit",
        "test_the_server_file_holds_the_function_and_what_it_uses",
    }),
    "tests/test_grading_snapshot_server.py": frozenset({
        "test_the_server_file_holds_the_function_and_what_it_uses",
    }),
    "tests/test_grading_refresher.py": frozenset({
        "test_capstone_unknown_scenario_is_a_clear_error", "test_unknown_scenario_is_a_clear_error",
    }),
    "tests/test_hostile_servers.py": frozenset({
        "test_error_reasons_are_closed_sets", "test_policies_are_checked_before_any_process",
    }),
    "tests/test_line_client_envelope.py": frozenset({
        "test_assert_checker_accepts_a_boolean_id_even_without_O",
        "test_check_reply_names_the_first_broken_rule",
        "test_the_cell_written_checks_agree_with_check_reply_on_their_three_rules",
        "test_wrong_sdk_stops_before_spawning",
    }),
    "tests/test_peers.py": frozenset({
        "test_a_missing_node_fails_loudly_with_the_install_commands",
        "test_expected_names_exactly_the_pinned_peers",
        "test_stored_everything_walks_hold_to_expected", "test_stored_guarded_walk_holds_to_expected",
        "test_stored_python_sdk_table_holds_to_expected", "test_stored_table_holds_to_expected",
    }),
    "tests/test_portable.py": frozenset({
        "test_the_package_uses_no_linux_only_mechanism", "test_the_scan_recognises_each_mechanism",
    }),
    "tests/test_protocol.py": frozenset({
        "test_envelope_keys_and_headers_are_the_sdks",
        "test_eras_are_the_client_modes_the_sdk_accepts", "test_error_codes_are_the_sdks",
        "test_resource_not_found_is_a_retired_code_the_sdk_never_reuses",
        "test_versions_are_the_sdks_latest_of_each_era",
    }),
    "tests/test_schema_lab.py": frozenset({
        "test_audit_differences_name_every_change",
        "test_chapter_4_kills_every_mutant_at_its_named_check",
        "test_judging_counts_only_the_designated_check",
    }),
    "tests/test_sdk129.py": frozenset({
        "test_an_unknown_server_name_and_a_missing_environment_are_typed_errors",
        "test_the_peer_environment_is_pinned_exactly",
    }),
    "tests/test_servers_answer.py": frozenset({
        "test_the_oracle_covers_every_server_and_mode",
    }),
    "tests/test_servers_paging.py": frozenset({
        "test_the_oracle_pages_every_list_at_least_twice",
    }),
    "tests/test_snapshot_lab.py": frozenset({
        "test_a_wrong_check_or_a_surviving_control_is_not_a_kill", "test_manifest_membership_is_exact",
        "test_manifest_shape_is_checked",
        "test_recovery_must_cover_the_same_documents_without_an_oracle",
        "test_server_accepts_scenario_and_mode_and_refuses_unknown_ones",
    }),
    "tests/test_stateless_wire.py": frozenset({
        "test_the_old_http_sse_transport_still_ships_and_holds_a_stream_per_session",
        "test_what_the_revision_retires_in_the_sdks_tables",
    }),
    "tests/test_stateless.py": frozenset({
        "test_checklist_fits_a_projector", "test_checklist_links_only_course_chapters",
    }),
    "tests/test_student_copy.py": frozenset({
        "test_the_copy_has_no_solution_and_keeps_every_other_cell_as_it_is",
        "test_the_copy_never_overwrites_a_students_work",
    }),
    "tests/test_troubleshooting.py": frozenset({
        "test_missing_widget_model",
        "test_page_and_tests_cover_the_same_errors",
    }),
    "tests/test_walker.py": frozenset({
        "test_cursor_rules_one_page_at_a_time", "test_invalid_item_budget_rejected_before_any_request",
        "test_invalid_page_budget_rejected_before_any_request", "test_sdk_version_is_pinned",
        "test_unknown_kind_rejected",
    }),
    "tests/test_widgets.py": frozenset({
        "test_next_page_without_server_says_so", "test_only_widget_cells_have_ignored_outputs",
    }),
}
STARTS_A_PROCESS = frozenset({"subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn",
                              "os.system", "os.exec", "socket.sendmsg"})


def layer(item: pytest.Item, root: Path) -> str:
    path = Path(str(item.path))
    if path.suffix == ".ipynb":
        return "notebook"
    try:
        relative = path.relative_to(root).as_posix()
    except ValueError:
        relative = path.name
    if relative.endswith("_unit.py"):
        return "inprocess"
    if relative in INPROCESS:
        names = INPROCESS[relative]
        if names is ALL or getattr(item, "originalname", item.name) in names:
            return "inprocess"
    return "stdio"


def mark(items: list[pytest.Item], root: Path) -> None:
    for item in items:
        item.add_marker(layer(item, root))


_watching: dict[str, str | None] = {"test": None, "started": None}
_hooked = False


def _audit(event: str, args: tuple) -> None:
    if _watching["test"] is not None and _watching["started"] is None and event in STARTS_A_PROCESS:
        _watching["started"] = event


def watch(item: pytest.Item) -> None:
    """Start watching an in-process test (from its set-up on); other tests are not watched."""
    global _hooked
    _watching.update(test=None, started=None)
    if item.get_closest_marker("inprocess") is None:
        return
    if not _hooked:
        sys.addaudithook(_audit)  # cannot be removed; it does nothing while no test is watched
        _hooked = True
    _watching["test"] = item.nodeid


def judge(item: pytest.Item) -> None:
    """Fail an in-process test that started a process."""
    started, watched = _watching["started"], _watching["test"]
    _watching.update(test=None, started=None)
    if started is not None and watched == item.nodeid:
        pytest.fail(f"an inprocess test started a process ({started}): list it as stdio in "
                    "course_lib/tooling/layers.py, or keep it in process", pytrace=False)
