"""Stand-in server for envelope replays (standard library only, so it starts in milliseconds).

``python course_lib/servers/_standin.py CAPTURE.json`` answers each request on stdin with the reply
recorded for it in the capture, written verbatim, one line each. A request that differs from
the recorded one ends the stand-in with code 3 and a line on stderr, so a replay can only
pass if the client sent exactly the captured session. Optional capture keys inject process
faults: ``banner`` (a line on stdout before the first reply), ``stderr`` (a line on stderr),
``trailing`` (a line on stdout after stdin EOF), ``linger`` (seconds to stay alive after EOF),
``mute`` (read requests, never reply) and ``exit_code``. On start it writes ``CAPTURE.started``,
the proof that it ran at all.
"""
import json
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    path = Path(argv[0])
    capture = json.loads(path.read_text(encoding="utf-8"))
    path.with_suffix(".started").write_text("started\n", encoding="utf-8")
    faults = capture.get("faults", {})
    if "stderr" in faults:
        sys.stderr.write(faults["stderr"] + "\n")
        sys.stderr.flush()
    if "banner" in faults:
        sys.stdout.write(faults["banner"] + "\n")
        sys.stdout.flush()
    exchanges = iter(capture["exchanges"])
    for line in sys.stdin:
        message = json.loads(line)
        exchange = next(exchanges, None)
        if exchange is None or message != exchange["request"]:
            sys.stderr.write(f"stand-in: message {message.get('id', message.get('method'))!r} "
                             "is not the one in the capture\n")
            return 3
        if "reply" in exchange and not faults.get("mute"):
            sys.stdout.write(json.dumps(exchange["reply"]) + "\n")
            sys.stdout.flush()
    if "trailing" in faults:
        sys.stdout.write(faults["trailing"] + "\n")
        sys.stdout.flush()
    time.sleep(faults.get("linger", 0))
    return faults.get("exit_code", 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
