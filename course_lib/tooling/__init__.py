"""Build and test tooling, not course content: ``regen`` (re-execute the chapters), ``slides``,
``student_copy``, ``bench``, ``browser_check`` (with ``lab_page``, ``browser_clicks``, ``lab_server``
and ``slides_check`` with ``slides_verdict``) and the ``pytest_plugin``."""
