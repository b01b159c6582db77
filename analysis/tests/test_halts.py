"""The guest's halts (halts.csv): a vCPU thread asleep while its guest had halted counts as neither
off nor on, so a waiter that halted for its kick is not 'waiter-preempted' and a holder whose
guest halted is not 'holder blocked'; a record lost or refused leaves that time possibly halted
(the side uncertain where it decides), and the halted share is counted apart (lhp.py's halts)."""
import numpy as np
import pandas as pd
import pytest

from spinlab_report import contract as c
from spinlab_report import lhp
from spinlab_report.attribution import long_waits_share
from spinlab_report.lhp_share import blocked_shares, halted_shares
from spinlab_report.reader import Snapshot, read_halts

# host = guest + 1000, to within +-10 cycles
CLOCK = {"offset_cycles": 1000, "drift_ppm": 0.0, "ref_guest_tsc": 0, "bound_max_cycles": 10.0,
         "points": [[0, 1000, 10.0], [10_000_000, 1000, 10.0]]}


def _tl(rows):
    return pd.DataFrame([(v, 10 + v, s, a, b, "p", 1, p) for v, s, a, b, p in rows],
                        columns=["vcpu", "tid", "state", "start_host_tsc", "end_host_tsc", "phase", "rep", "preemptor"])


def _halts(rows):
    """(cpu, enter guest TSC, exit guest TSC or None, kind) as reader.read_halts gives them."""
    return pd.DataFrame({c.K.cpu: np.array([r[0] for r in rows], dtype=np.int64),
                         c.K.enter_tsc: np.array([r[1] for r in rows], dtype=np.float64),
                         c.K.exit_tsc: np.array([np.inf if r[2] is None else r[2] for r in rows], dtype=np.float64),
                         c.K.kind: np.array([r[3] for r in rows], dtype=object)})


def _wait(cpu, holder, start_guest, cycles):
    return {"cpu": cpu, "lock_class": "x", "start_tsc": start_guest, "wait_cycles": cycles, "holder_cpu": holder,
            "holder_end_cpu": holder, "lhp_class": "unknown"}


def _share(waits, tl, halts):
    return long_waits_share([Snapshot("p", 1, 1.0, 0, 1, {}, [], waits, 1, 0, "s")], tl, CLOCK, 1, halts)


# Waiter 1 asleep (preemptor blocked) over host [2000, 9000) of its wait, guest [0, 10000) =
# host [1000, 11000); holder 0 runs throughout.
WAITER_ASLEEP = _tl([(0, "on", 0, 20_000, None), (1, "on", 0, 2000, None), (1, "off", 2000, 9000, "blocked"),
                     (1, "on", 9000, 20_000, None)])


def test_a_waiter_whose_guest_halted_is_not_waiter_preempted():
    waits = [_wait(1, 0, 0, 10_000)]
    (w,) = _share(waits, WAITER_ASLEEP, None)["waits"]
    assert w["cause"] == "waiter-preempted"  # without the guest's record: asleep is off
    # The guest halted over guest [900, 8100) = host [1900, 9100): the sleep is all inside.
    r = _share(waits, WAITER_ASLEEP, _halts([(1, 900, 8100, "halted")]))
    (w,) = r["waits"]
    assert (w["cause"], w["waiter_side"]) == ("neither", "on")
    assert w["waiter_off_cycles"] == [0.0, 0.0]
    oc = r["off_cycles"]["waiter"]
    assert oc["off"] == pytest.approx(7000) and oc["halted"] == pytest.approx(7000) and oc["blocked"] == 0
    assert halted_shares(r["off_cycles"]) == {"waiter": pytest.approx(1.0)}


def test_a_sleep_outside_the_halt_stays_blocked_and_the_clock_bound_is_kept():
    # The guest halted over guest [1000, 4000) = host [2000, 5000) only: the rest of the sleep,
    # host [5000, 9000), was the thread blocked while its guest had work (4000 of 10000: under the
    # threshold, so 'on'); the halt's edges are known to +-10 (the clock's bound): at least the
    # sleep after the latest the halt may have ended (5010), at most all but what surely halted
    # ([2010, 4990)).
    r = _share([_wait(1, 0, 0, 10_000)], WAITER_ASLEEP, _halts([(1, 1000, 4000, "halted")]))
    (w,) = r["waits"]
    assert w["waiter_off_cycles"] == [pytest.approx(3990), pytest.approx(4020)] and w["cause"] == "neither"
    oc = r["off_cycles"]["waiter"]
    assert oc["halted"] == pytest.approx(3000, abs=10) and oc["blocked"] == pytest.approx(4000, abs=10)  # middles
    assert blocked_shares(r["off_cycles"])["waiter"] == pytest.approx(4 / 7, abs=1e-3)


def test_a_lost_record_leaves_the_side_uncertain_never_guessed():
    # The ring overflowed over guest [500, 8500): the vCPU may have halted anywhere in it, so the
    # waiter was off between 0 (all halted) and 7000 (none): straddles the threshold.
    (w,) = _share([_wait(1, 0, 0, 10_000)], WAITER_ASLEEP, _halts([(1, 500, 8500, "lost")]))["waits"]
    assert (w["cause"], w["waiter_side"]) == ("uncertain", "uncertain")
    assert w["waiter_off_cycles"] == [0.0, pytest.approx(7000)]
    # A refused record (exit empty: to the end) says the same from its enter on.
    (w,) = _share([_wait(1, 0, 0, 10_000)], WAITER_ASLEEP, _halts([(1, 500, None, "refused")]))["waits"]
    assert w["cause"] == "uncertain"


def test_a_halt_still_in_progress_at_the_last_read_covers_to_the_end():
    (w,) = _share([_wait(1, 0, 0, 10_000)], WAITER_ASLEEP, _halts([(1, 900, None, "halted")]))["waits"]
    assert (w["cause"], w["waiter_off_cycles"]) == ("neither", [0.0, 0.0])


def test_a_holder_whose_guest_halted_is_not_holder_blocked_and_a_preempted_one_stays_off():
    tl = _tl([(0, "on", 0, 1500, None), (0, "off", 1500, 9500, "blocked"), (0, "on", 9500, 20_000, None),
              (1, "on", 0, 20_000, None)])
    waits = [_wait(1, 0, 0, 10_000)]
    assert _share(waits, tl, None)["waits"][0]["cause"] == "holder_blocked"
    (w,) = _share(waits, tl, _halts([(0, 400, 8600, "halted")]))["waits"]
    assert (w["cause"], w["holder_side"]) == ("neither", "on")
    # A holder preempted (runnable, switched out) is off whatever halts its other CPU recorded.
    tl = _tl([(0, "on", 0, 1500, None), (0, "off", 1500, 9500, "hog"), (0, "on", 9500, 20_000, None),
              (1, "on", 0, 20_000, None)])
    (w,) = _share(waits, tl, _halts([(1, 0, 9000, "halted")]))["waits"]
    assert w["cause"] == "holder-preempted"


def test_without_a_record_halted_is_none_not_zero():
    r = _share([_wait(1, 0, 0, 10_000)], WAITER_ASLEEP, None)
    assert r["off_cycles"]["waiter"]["halted"] is None and halted_shares(r["off_cycles"]) == {}


def test_interval_minus():
    s, e = np.array([0.0, 10, 30]), np.array([5.0, 20, 40])
    got = lhp.interval_minus(s, e, np.array([3.0, 12, 35]), np.array([11.0, 15, 100]))
    assert [x.tolist() for x in got] == [[0, 11, 15, 30], [3, 12, 20, 35]]
    assert [x.tolist() for x in lhp.interval_minus(s, e, np.array([-np.inf]), np.array([np.inf]))] == [[], []]
    assert [x.tolist() for x in lhp.interval_minus(s, e, np.array([]), np.array([]))] == [s.tolist(), e.tolist()]


def _write(tmp_path, text):
    p = tmp_path / c.HALTS
    p.write_text(text)
    return str(p)


def test_read_halts(tmp_path):
    df = read_halts(_write(tmp_path, "cpu,enter_tsc,exit_tsc,kind\n0,100,200,halted\n0,300,,halted\n1,5,,lost\n"))
    assert df[c.K.exit_tsc].tolist() == [200, np.inf, np.inf] and df[c.K.kind].tolist() == ["halted", "halted", "lost"]


@pytest.mark.parametrize("text, says", [
    ("cpu,enter_tsc,kind\n0,1,halted\n", "missing column(s) exit_tsc"),
    ("cpu,enter_tsc,exit_tsc,kind\n0,1,2,napping\n", "unknown kind(s) 'napping'"),
    ("cpu,enter_tsc,exit_tsc,kind\n0,100,200,halted\n0,300,200,halted\n", "line 3: exit_tsc is before enter_tsc"),
    ("cpu,enter_tsc,exit_tsc,kind\n0,100,soon,halted\n", "line 2: exit_tsc 'soon' is not a number"),
    ("cpu,enter_tsc,exit_tsc,kind\n-1,100,200,halted\n", "column 'cpu' must hold integers >= 0"),
])
def test_bad_halts_are_named(tmp_path, text, says):
    with pytest.raises(c.ContractError, match="halts.csv: .*" + __import__("re").escape(says)):
        read_halts(_write(tmp_path, text))


def _cut(rows, spans):
    """The timeline with every part of a row inside one of its vCPU's halt spans (host) made 'on'."""
    out = []
    for v, s, a, b, p in rows:
        pts = sorted({a, b, *[x for h0, h1 in spans.get(v, []) for x in (h0, h1) if a < x < b]})
        for x, y in zip(pts, pts[1:]):
            inside = any(h0 <= x and y <= h1 for h0, h1 in spans.get(v, []))
            out.append((v, "on" if inside else s, x, y, None if inside else p))
    return out


def test_halts_count_as_on_time_against_a_timeline_cut_by_hand():
    """With an exact clock (bound 0), attributing with the halts is attributing the timeline in
    which every halted part of a row was 'on': random rows, halts and waits, every field equal."""
    rng = np.random.default_rng(52)
    exact = {"offset_cycles": 1000, "drift_ppm": 0.0, "ref_guest_tsc": 0, "bound_max_cycles": 0.0,
             "points": [[0, 1000, 0.0], [10_000_000, 1000, 0.0]]}
    for _ in range(40):
        rows, spans = [], {}
        for v in (0, 1):
            edges = np.unique(rng.integers(1000, 99_000, 12)).tolist()
            t = 0
            for x in edges + [100_000]:
                state = rng.choice(["on", "off", "unknown", "frozen"], p=[0.4, 0.35, 0.1, 0.15])
                rows.append((v, str(state), t, x, (str(rng.choice(["blocked", "hog"])) if state == "off" else None)))
                t = x
            hs = np.sort(rng.integers(1000, 99_000, 6)).tolist()
            spans[v] = [(hs[i], hs[i + 1]) for i in (0, 2, 4) if hs[i + 1] > hs[i]]
        halts = _halts([(v, h0 - 1000, h1 - 1000, "halted") for v in spans for h0, h1 in spans[v]])
        waits = [_wait(int(rng.integers(0, 2)), -1, int(rng.integers(0, 90_000)), int(rng.integers(1000, 9000)))
                 for _ in range(30)]
        for w in waits:
            w["holder_cpu"] = w["holder_end_cpu"] = 1 - w["cpu"]
        snap = [Snapshot("p", 1, 1.0, 0, 1, {}, [], waits, 1, 0, "s")]
        with_halts = list(long_waits_share(snap, _tl(rows), exact, 1, halts)["waits"])
        by_hand = list(long_waits_share(snap, _tl(_cut(rows, spans)), exact, 1, None)["waits"])
        assert with_halts == by_hand


def test_a_halt_before_the_clocks_first_point_reaches_no_further_than_that_point():
    """A halt at boot, before the clock's first point, cannot be placed, but it was over before
    that point's publication: it is possibly halted up to the point's latest host time, and no
    wait after it is made uncertain by it (a GT run: every frozen holder was 'uncertain' when such a
    halt was taken to reach to the end of the run)."""
    late = {**CLOCK, "points": [[500, 1000, 10.0], [10_000_000, 1000, 10.0]]}
    tl = _tl([(0, "on", 0, 1500, None), (0, "frozen", 1500, 9500, None), (0, "on", 9500, 20_000, None),
              (1, "on", 0, 20_000, None)])
    waits = [_wait(1, 0, 0, 10_000)]
    share = lambda halts: long_waits_share([Snapshot("p", 1, 1.0, 0, 1, {}, [], waits, 1, 0, "s")], tl, late, 1, halts)
    # the wait starts at guest 0, before the first point: it is not measured; one at guest 600 is
    waits[0]["start_tsc"] = 600
    (w,) = share(_halts([(0, 100, 400, "halted")]))["waits"]
    assert w["cause"] == "holder-preempted"
    idx = lhp.halt_index(_halts([(0, 100, 400, "halted"), (1, 20_000_000, None, "halted")]), lhp.ClockMap(late))
    assert [x.tolist() for x in idx[0][1]] == [[-np.inf], [1510.0]] and idx[0][0][0].size == 0
    assert [x.tolist() for x in idx[1][1]] == [[10_000_990.0], [np.inf]]
