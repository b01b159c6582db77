"""The host recorders beside a guest (hostload.py): started, waited for through their ready
file, stopped with SIGINT (then SIGTERM, then SIGKILL) and never left behind. A fake
spinlab-load (a shell script) stands in; the real one runs in linux_test_ground_truth.py."""
import os
import time

import pytest
import linux_testlib  # noqa: F401  (spinlab_linux on the path)

from spinlab_linux import hostload

FAKE = """#!/bin/sh
# a stand-in for spinlab-load: $1 the ready file, $2 what to do on SIGINT
trap '{on_int}' INT
trap 'echo TERM >> {log}; exit 143' TERM
echo started >> {log}
end=$(( $(date +%s%N) + {delay_ns} ))
while [ $(date +%s%N) -lt $end ]; do sleep 0.05; done   # short sleeps: traps run between them
{ready}
while :; do sleep 0.05; done
"""


def fake(tmp_path, on_int="echo INT >> LOG; exit 0", delay=0.2, ready=True, exit_early=False):
    log = tmp_path / "events"
    script = tmp_path / "fake-spinlab-load"
    body = FAKE.format(on_int=on_int.replace("LOG", str(log)), log=log, delay_ns=int(delay * 1e9),
                       ready=(f'echo $$ > "$1"' if ready else "") + ("\nexit 3" if exit_early else ""))
    script.write_text(body)
    script.chmod(0o755)
    return script, log


def recorder(tmp_path, script, name="timeline"):
    ready = tmp_path / f"{name}.ready"
    return hostload.Recorder(name, [str(script), str(ready)], ready, tmp_path / f"{name}.log")


def test_ready_then_stopped_with_sigint(tmp_path):
    script, log = fake(tmp_path)
    r = recorder(tmp_path, script)
    r.start()
    took = hostload.wait_ready([r], timeout=10)
    assert 0.1 < took < 5 and r.ready_text.strip() == str(r.proc.pid)
    assert r.stop() == 0
    assert log.read_text().split() == ["started", "INT"]          # SIGINT was enough
    assert r.proc.poll() is not None


def test_a_recorder_that_ignores_sigint_gets_sigterm(tmp_path):
    script, log = fake(tmp_path, on_int="echo INT >> LOG")          # and carries on
    r = recorder(tmp_path, script)
    r.start()
    hostload.wait_ready([r], timeout=10)
    t0 = time.monotonic()
    assert r.stop(timeout=0.5) == 143
    assert log.read_text().split() == ["started", "INT", "TERM"]
    assert time.monotonic() - t0 < 5


def test_exit_before_ready_is_an_error_with_its_log(tmp_path):
    script, log = fake(tmp_path, ready=False, exit_early=True)
    r = recorder(tmp_path, script, "freeze")
    r.start()
    with pytest.raises(hostload.HostLoadError, match="spinlab-load freeze exited with status 3 before it was ready"):
        hostload.wait_ready([r], timeout=10)


def test_not_ready_in_time_and_a_guest_that_ended(tmp_path):
    script, _ = fake(tmp_path, delay=30)
    r = recorder(tmp_path, script)
    r.start()
    try:
        with pytest.raises(hostload.HostLoadError, match="not ready after 0.3 s"):
            hostload.wait_ready([r], timeout=0.3)
        with pytest.raises(hostload.HostLoadError, match="the guest ended before"):
            hostload.wait_ready([r], timeout=10, alive=lambda: False)
    finally:
        assert r.stop(timeout=5) == 0              # SIGINT, between two short sleeps
    assert r.proc.poll() is not None


def test_a_missing_binary_says_how_to_build_it(tmp_path):
    r = hostload.Recorder("timeline", [str(tmp_path / "spinlab-load"), "timeline"],
                          tmp_path / "r", tmp_path / "log")
    with pytest.raises(hostload.HostLoadError, match="build the host tools: make"):
        r.start()


def test_argv():
    t = hostload.timeline_argv(42, "/o/timeline.csv", "/t/r", "/o/freezes.csv", binary="/b/sl")
    assert t == ["/b/sl", "timeline", "--qemu-pid", "42", "--out", "/o/timeline.csv",
                 "--ready-file", "/t/r", "--freezes", "/o/freezes.csv"]
    p = hostload.freeze_argv(42, [1, 3], 30, 100, "/o/p.csv", "/t/r", binary="/b/sl")
    assert p == ["/b/sl", "freeze", "--qemu-pid", "42", "--vcpus", "1,3", "--freeze-ms", "30",
                 "--period-ms", "100", "--out", "/o/p.csv", "--ready-file", "/t/r",
                 "--rt-priority", "10"]
    assert os.path.basename(hostload.spinlab_load()) == "spinlab-load"
