"""Private: how a lab's server process is started, watched and stopped.

``process`` (start and stop without the SDK), ``proctree`` (what a server left behind),
``fastlaunch`` (course servers forked from a pre-warmed parent) and ``startup`` (import costs
deferred until used). Students never import these; ``course_lib.connect`` does.
"""
