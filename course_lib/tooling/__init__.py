"""Build and test tooling, not course content: ``regen`` (re-execute the chapters), ``slides``,
``student_copy``, ``bench``, ``browser_check`` (with ``browser_clicks``, ``lab_server`` and
``slides_check``) and the ``pytest_plugin``."""
