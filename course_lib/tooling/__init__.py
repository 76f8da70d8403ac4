"""Build and test tooling, not course content: ``regen`` (re-execute the chapters), ``slides``,
``student_copy``, ``bench``, ``browser_check`` and the ``pytest_plugin``."""
