"""The QMP client against a scripted server on a Unix socket: events are skipped wherever they
come, before the greeting too (QEMU 7.2 once sent a RESUME event first), and a server that
does not greet is named."""
import json
import os
import socket
import sys
import threading

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from spinlab_vm import qmp  # noqa: E402

GREETING = {"QMP": {"version": {"qemu": {"major": 7, "minor": 2, "micro": 0}}, "capabilities": []}}
RESUME = {"timestamp": {"seconds": 1, "microseconds": 0}, "event": "RESUME"}


def serve(path, script):
    """Accept one client and play script: dicts are sent as lines; "<" reads one line."""
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)
    got = []

    def run():
        c, _ = srv.accept()
        f = c.makefile("rb")
        for step in script:
            if step == "<":
                got.append(json.loads(f.readline()))
            else:
                c.sendall(json.dumps(step).encode() + b"\n")
        c.close()
        srv.close()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, got


def test_events_before_the_greeting_and_before_a_reply_are_skipped(tmp_path):
    path = str(tmp_path / "qmp.sock")
    t, got = serve(path, [RESUME, RESUME, GREETING, "<", {"return": {}}, "<", RESUME, {"return": [1, 2]}])
    with qmp.Qmp(path, timeout=5) as q:
        assert q.execute("query-cpus-fast") == [1, 2]
    t.join(5)
    assert got == [{"execute": "qmp_capabilities"}, {"execute": "query-cpus-fast"}]


def test_a_server_that_does_not_greet_is_named(tmp_path):
    path = str(tmp_path / "qmp.sock")
    t, _ = serve(path, [{"return": {}}])
    with pytest.raises(qmp.QmpError, match="unexpected QMP greeting"):
        qmp.Qmp(path, timeout=5)
    t.join(5)
