"""The ground-truth module's holds in the stream (HOLDS frames, a gt trailer): every check of the
reader, on built streams and on a real one, without QEMU."""
import struct

import pytest
from linux_testlib import DATA, cpu_frame, encode, meta, trailer, wait_bytes

from spinlab_linux import records

LOCK = 0xffffffffc0239468
HOLDER = 1


def holds(n, start=1_000_000, hold=5_000_000, gap=100_000, waiter_every=1):
    """Alternating holds: the holder (cpu 1, flag 1) for `hold`, then cpu 0 briefly."""
    out, t = [], start
    for i in range(n):
        if i % 2 == 0:
            out.append((HOLDER, 1, t, t + hold))
            t += hold + gap
        else:
            out.append((0, 0, t, t + 2_000))
            t += 2_000 + gap
    return out


def holds_payload(lock, index, hs):
    return struct.pack("<QII", lock, index, len(hs)) + b"".join(struct.pack("<IIQQ", *h) for h in hs)


def gt_trailer(frames, hs, ncpus=2, **kw):
    acq = [sum(1 for h in hs if h[0] == c) for c in range(ncpus)]
    g = {"lock": f"{LOCK:#x}", "module_params": "holder_cpu=1 hold_us=2000 gap_us=100",
         "holder_cpu": HOLDER, "hold_us": 2000, "gap_us": 100, "holds": len(hs), "dropped": 0,
         "max_holds": 262144, "tsc_khz": 2596000, "hold_cycles": 5192000, "gap_cycles": 259600,
         "start_tsc": 1, "stop_tsc": 2, "acquisitions": acq}
    g.update(kw)
    return trailer(frames, 1, ncpus, gt=g)


def gt_stream(hs=None, per_frame=1024, lock=LOCK, trailer_kw=None, index_shift=0):
    """META (workload gt), one wait on cpu 0, the CPU frames, HOLDS frames, the trailer."""
    hs = holds(6) if hs is None else hs
    frames = [(records.META, meta(2, workload="gt")),
              (records.WAITS, wait_bytes([(0, 0, 0, LOCK, 2_000_000, 9_000_000)])),
              (records.CPU, cpu_frame(0, 1)), (records.CPU, cpu_frame(1, 0))]
    i = 0
    while True:
        part = hs[i:i + per_frame]
        frames.append((records.HOLDS, holds_payload(lock, i + index_shift, part)))
        i += len(part)
        if i >= len(hs):
            break
    frames.append((records.TRAILER, gt_trailer(len(frames), hs, **(trailer_kw or {}))))
    return frames


def bad(frames, *expect):
    with pytest.raises(records.StreamError) as e:
        records.parse(encode(frames))
    for text in expect:
        assert text in str(e.value), str(e.value)
    return e.value


def test_good_gt_stream():
    run = records.parse(encode(gt_stream()))
    assert run.gt_lock == LOCK
    assert [(h.cpu, h.holder) for h in run.holds] == [(1, True), (0, False)] * 3
    assert all(h.release >= h.acquire for h in run.holds)
    s = records.summary(run)["gt"]
    assert s["holds"] == 6 and s["holder_holds"] == 3 and s["waits_on_lock"] == 1
    assert s["long_waits_on_lock"] == 1 and s["holder_hold_cycles_median"] == 5_000_000


def test_many_holds_frames_and_an_empty_one():
    run = records.parse(encode(gt_stream(holds(2500))))
    assert len(run.holds) == 2500
    run = records.parse(encode(gt_stream([])))          # no hold: one frame carries the lock
    assert run.holds == [] and run.gt_lock == LOCK


def test_hold_cpu_beyond_the_guests_cpus():
    hs = holds(6)
    hs[3] = (2, 0) + hs[3][2:]
    e = bad(gt_stream(hs), "HOLDS frame 4 hold 3: cpu 2, but the guest has 2 CPUs")
    assert e.partial.holds == [] and len(e.partial.waits) == 1    # what came before is kept


def test_release_before_acquire():
    hs = holds(6)
    c, f, a, r = hs[2]
    hs[2] = (c, f, a, a - 1)
    bad(gt_stream(hs), "hold 2: released at", "before its acquire")


def test_overlapping_holds():
    hs = holds(6)
    c, f, a, r = hs[1]
    hs[1] = (c, f, hs[0][3] - 10, r)                    # acquired before the holder released
    bad(gt_stream(hs), "hold 1: acquired at", "a lock held twice at once")


def test_overlap_across_frames_is_seen():
    hs = holds(6)
    c, f, a, r = hs[4]
    hs[4] = (c, f, hs[3][3] - 1, r)
    bad(gt_stream(hs, per_frame=4), "hold 4", "a lock held twice at once")


def test_unknown_flags():
    hs = holds(4)
    hs[0] = (1, 3) + hs[0][2:]
    bad(gt_stream(hs), "unknown flags 0x3")


def test_holder_flag_on_the_wrong_cpu():
    hs = holds(4)
    hs[1] = (0, 1) + hs[1][2:]                          # cpu 0 flagged as the holder thread
    bad(gt_stream(hs), "hold 1: cpu 0 with holder flag True, but the holder CPU is 1")


def test_index_gap_between_frames():
    bad(gt_stream(holds(6), index_shift=1), "HOLDS frame 4 begins at hold 1, 0 came before it")


def test_count_does_not_match_the_payload():
    f = gt_stream()
    payload = f[4][1]
    f[4] = (records.HOLDS, payload[:8] + struct.pack("<II", 0, 7) + payload[16:])
    bad(f, "says 7 holds, it carries 6")


def test_payload_not_a_whole_number_of_records():
    f = gt_stream()
    f[4] = (records.HOLDS, f[4][1] + b"\0" * 5)
    bad(f, "HOLDS frame 4 of 165 bytes")


def test_lock_changes_between_frames():
    f = gt_stream(holds(6), per_frame=3)
    p = f[5][1]
    f[5] = (records.HOLDS, struct.pack("<Q", LOCK + 8) + p[8:])
    bad(f, "names lock", "earlier ones")


def test_holds_in_a_stream_of_another_workload():
    f = gt_stream()
    f[0] = (records.META, meta(2, workload="hackbench"))
    bad(f, "HOLDS frame 4 in a stream of workload 'hackbench', not gt")


def test_trailer_counts_other_holds():
    bad(gt_stream(trailer_kw={"holds": 5}), "TRAILER gt counts 5 holds, the HOLDS frames had 6")


def test_trailer_names_another_lock():
    bad(gt_stream(trailer_kw={"lock": "0x1234"}), "TRAILER gt lock '0x1234'")


def test_acquisitions_do_not_add_up():
    bad(gt_stream(trailer_kw={"acquisitions": [3, 4]}),
        "7 acquisitions, but 6 holds and 0 dropped")
    # with dropped holds the totals must still add up, per CPU no longer
    run = records.parse(encode(gt_stream(trailer_kw={"acquisitions": [3, 5], "dropped": 2})))
    assert len(run.holds) == 6
    bad(gt_stream(trailer_kw={"acquisitions": [4, 2]}), "acquisitions [4, 2] per CPU, the holds [3, 3]")


def test_gt_stream_without_holds_or_gt_trailer():
    f = gt_stream()
    del f[4]
    f[-1] = (records.TRAILER, gt_trailer(4, holds(6)))
    bad(f, "a gt stream without a HOLDS frame")
    f = gt_stream()
    t = dict(f[-1][1])
    del t["gt"]
    f[-1] = (records.TRAILER, t)
    bad(f, "a gt stream's TRAILER has no 'gt' object")


def test_a_real_gt_stream_reads_back():
    # A 2 s TCG run (2 vCPUs, lock mode native, spinlab.gt=1,2000,100) as the agent sent it.
    run = records.parse((DATA / "native-gt.stream").read_bytes())
    assert run.meta["workload"] == "gt" and run.gt_lock is not None
    g = run.trailer["gt"]
    assert g["holds"] == len(run.holds) > 100 and g["dropped"] == 0
    assert sum(g["acquisitions"]) == len(run.holds)
    assert {h.cpu for h in run.holds if h.holder} == {1}
    on = [w for w in run.waits if w.lock == run.gt_lock]
    assert on and all(w.cpu in (0, 1) for w in on)
    # the holder holds for 2000 us of the guest's TSC (tsc_khz from the module)
    held = sorted(h.release - h.acquire for h in run.holds if h.holder)
    assert abs(held[len(held) // 2] - 2 * g["tsc_khz"]) < 0.05 * 2 * g["tsc_khz"]
