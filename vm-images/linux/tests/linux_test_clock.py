"""The clock: the host helper spinlab-linux-clock against a fake agent on a Unix socket (as
QEMU's clock port presents it), the checked reader of its points, and the choice of the points
a map is fitted through. No QEMU."""
import json
import os
import signal
import socket
import struct
import subprocess
import threading
import time

import pytest
import linux_testlib  # noqa: F401  (spinlab_linux on the path)

from spinlab_linux import clock, clockfit


@pytest.fixture(scope="module")
def helper(tmp_path_factory):
    return clock.build_helper(tmp_path_factory.mktemp("clock") / clock.HELPER)


class FakeAgent(threading.Thread):
    """Listens where QEMU would; answers each 8-byte ping with <the ping, a guest TSC> after
    `delay` seconds. answer(seq) may change what is sent back. Stops after `limit` pings by
    closing the connection (EOF for the helper), or when told."""

    def __init__(self, path, delay=0.0, limit=None, answer=None, offset=-10**12):
        super().__init__(daemon=True)
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(str(path))
        self.srv.listen(1)
        self.delay, self.limit, self.answer, self.offset = delay, limit, answer, offset
        self.pings = 0
        self.start()

    def run(self):
        conn, _ = self.srv.accept()
        self.conn = conn
        with conn:
            buf = b""
            while self.limit is None or self.pings < self.limit:
                try:
                    chunk = conn.recv(8 - len(buf))
                except OSError:
                    return
                if not chunk:
                    return
                buf += chunk
                if len(buf) < 8:
                    continue
                (seq,) = struct.unpack("<Q", buf)
                buf = b""
                self.pings += 1
                time.sleep(self.delay)
                tsc = time.perf_counter_ns()  # not the host TSC: only its order matters here
                echo = self.answer(seq) if self.answer else seq
                try:
                    conn.sendall(struct.pack("<QQ", echo, tsc + 3 * 10**12))
                except OSError:                   # the helper is gone
                    return
        self.srv.close()


def run_helper(helper, tmp_path, **kw):
    sock = tmp_path / "clock.sock"
    agent = FakeAgent(sock, **kw)
    out, stats = tmp_path / "clock.csv", tmp_path / "stats.json"
    p = subprocess.Popen(clock.helper_argv(helper, sock, out, stats, period_ms=2),
                         stderr=subprocess.PIPE, text=True)
    return agent, p, out, stats


def test_points_bracket_the_answers_and_sigterm_stops(helper, tmp_path):
    agent, p, out, stats = run_helper(helper, tmp_path, delay=0.001)
    time.sleep(0.6)
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=5) == 0, p.stderr.read()
    pts = clock.read_points(out)
    assert len(pts) >= 20
    s = json.loads(stats.read_text())
    assert s["status"] == 0 and s["answered"] == len(pts) and s["pings"] >= len(pts)
    # the host TSC's rate, measured by the helper itself: a GHz-ish number
    assert 1e8 < s["host_tsc_hz"] < 1e11
    # each answer waited 1 ms: the brackets hold that
    assert all((ha - hb) / s["host_tsc_hz"] >= 0.0009 for hb, ha, _ in pts)
    # one ping at a time, every 2 ms: no exchange overlaps the next
    assert all(b[0] >= a[1] for a, b in zip(pts, pts[1:]))


def test_eof_from_qemu_ends_the_helper(helper, tmp_path):
    agent, p, out, stats = run_helper(helper, tmp_path, limit=5)
    assert p.wait(timeout=5) == 0
    assert len(clock.read_points(out)) == 5          # the sixth ping's answer never came
    assert "6 pings, 5 answered" in p.stderr.read()


def test_an_answer_that_is_not_the_pings_is_refused(helper, tmp_path):
    agent, p, out, stats = run_helper(helper, tmp_path, answer=lambda seq: seq if seq < 4 else seq + 1)
    assert p.wait(timeout=5) == 3
    assert "ping 4 answered as 5" in p.stderr.read()
    assert len(clock.read_points(out)) == 3


def test_no_socket_is_a_clear_error(helper, tmp_path):
    r = subprocess.run([str(helper), "--socket", str(tmp_path / "none.sock"), "--out",
                        str(tmp_path / "c.csv"), "--connect-timeout-s", "0.2"],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode == 1 and "cannot connect" in r.stderr


def test_the_helper_dies_with_its_parent(helper, tmp_path):
    # A parent that is SIGKILLed: the helper's PR_SET_PDEATHSIG ends it.
    sock = tmp_path / "clock.sock"
    FakeAgent(sock, delay=0.001)
    pidfile = tmp_path / "pid"
    parent = subprocess.Popen(["sh", "-c", f"{helper} --socket {sock} --out {tmp_path}/c.csv "
                               f"& echo $! > {pidfile}; wait"])
    deadline = time.monotonic() + 5
    while not pidfile.exists() or not pidfile.read_text().strip():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    pid = int(pidfile.read_text())
    time.sleep(0.2)
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 5
    while os.path.exists(f"/proc/{pid}") and "Z" not in open(f"/proc/{pid}/stat").read().split(")")[1][:3]:
        assert time.monotonic() < deadline, "the helper outlived its parent"
        time.sleep(0.02)


# ---- the reader ----

GOOD = "host_before,host_after,guest\n10,20,115\n30,45,130\n50,51,146\n"


def test_read_points_good_and_a_cut_last_line():
    assert clock.parse_points(GOOD) == [(10, 20, 115), (30, 45, 130), (50, 51, 146)]
    assert clock.parse_points(GOOD + "60,7") == [(10, 20, 115), (30, 45, 130), (50, 51, 146)]


@pytest.mark.parametrize("text,msg,kept", [
    ("host,after,guest\n1,2,3\n", "the first line is 'host,after,guest'", 0),
    (GOOD + "60,70\n", "line 5: '60,70' is not three non-negative integers", 3),
    (GOOD + "60,-70,1\n", "not three non-negative integers", 3),
    (GOOD + "70,60,200\n", "line 5: host_after 60 before host_before 70", 3),
    (GOOD + "50,60,200\n", "line 5: this exchange began (50) before the previous one ended (51)", 3),
    (GOOD + "60,70,146\n", "line 5: the guest's TSC 146 is not after the previous answer's 146", 3),
    ("host_before,host_after,guest\n1,2,3\n" + "4,5," + "9" * 21 + "\n", "beyond 64 bits", 1),
])
def test_read_points_refuses_bad_rows(text, msg, kept):
    with pytest.raises(clock.ClockError) as e:
        clock.parse_points(text, "clock.csv")
    assert msg in str(e.value), str(e.value)
    assert len(e.value.points) == kept


def test_bracket_stats():
    pts = [(0, w, 100 + i) for i, w in enumerate([10, 20, 30, 40, 1000])]
    pts = [(i * 10_000, i * 10_000 + w, g) for i, (_, w, g) in enumerate(pts)]
    s = clock.bracket_stats(pts, host_tsc_hz=1e6)
    assert (s["min"], s["median"], s["p99"], s["max"]) == (10, 30, 1000, 1000)
    assert s["us"]["median"] == 30.0


def test_fit_points_keeps_the_narrowest_and_drops_slow_answers():
    hz = 1_000_000_000        # 1 GHz: 1 ms = 10^6 cycles
    pts, t = [], 0
    widths = [4_000_000_000] + [300_000, 900_000, 30_000_000, 200_000, 5_000_000] * 20
    for i, w in enumerate(widths):
        pts.append((t, t + w, t + w // 2 + 7_000))      # a constant offset of 7,000
        t += w + 10_000_000                              # the next ping 10 ms later
    chosen = clock.fit_points(pts, hz)
    # the first answer (4 s: the guest was not listening yet) and the slow ones are gone
    assert all(ha - hb <= 1_000_000 for hb, ha, _ in chosen)
    assert pts[0] not in chosen
    # in every 50 ms window only the narrowest of those within the cap survives
    capped = [p for p in pts if p[1] - p[0] <= 1_000_000]
    windows = {}
    for p in capped:
        windows.setdefault((p[0] - capped[0][0]) // 50_000_000, []).append(p)
    assert chosen == sorted(min(ps, key=lambda p: p[1] - p[0]) for ps in windows.values())
    assert len(chosen) >= 30
    m = clockfit.fit(chosen)
    g = pts[40][2]
    host, bound = m.to_host(g)
    assert abs(host - (g - 7_000)) <= bound <= 500_000      # half the cap
    # every point slow: nothing passes the cap, so all of them are used (a map, wide)
    slow = [(i * 100, i * 100 + 50, 1000 + i) for i in range(5)]
    assert clock.fit_points(slow, 1e3) == slow
