"""The host's reader of the agent's stream: every check, on fixtures, without QEMU."""
import struct

import pytest
from linux_testlib import DATA, encode, frame, meta, cpu_frame, stream, trailer, wait_bytes

from spinlab_linux import records

W = records.WAITS


def waits(cpu, n, start=1000, length=5000, lock=0xffff888000001000):
    return [(cpu, 0, 0, lock + i, start + 10_000 * i, start + 10_000 * i + length) for i in range(n)]


def good():
    return stream({0: waits(0, 3), 1: waits(1, 2, length=1 << 21)})


def test_a_real_agent_stream_reads_back():
    # A 1.5 s TCG run of hackbench (lock mode tas) as the agent sent it.
    run = records.parse((DATA / "tas-hackbench.stream").read_bytes())
    assert run.meta["symbol"] == "native_queued_spin_lock_slowpath"
    assert run.meta["ncpus"] == 2 and run.complete
    assert len(run.waits) == run.trailer["waits"] == sum(c["waits"] for c in run.cpus.values())
    assert len(run.waits) > 100
    assert all(w.end >= w.start and w.cpu < 2 for w in run.waits)


def test_good_stream():
    run = records.parse(encode(good()))
    assert [(w.cpu, w.cycles) for w in run.waits] == [(0, 5000)] * 3 + [(1, 1 << 21)] * 2
    assert run.cpus[1]["waits"] == 2 and run.trailer["waits"] == 5


def test_many_wait_frames_per_cpu():
    run = records.parse(encode(stream({0: waits(0, 2500)}, batch=1024)))
    assert len(run.waits) == 2500


def bad(frames_or_bytes, *expect):
    data = frames_or_bytes if isinstance(frames_or_bytes, bytes) else encode(frames_or_bytes)
    with pytest.raises(records.StreamError) as e:
        records.parse(data)
    for text in expect:
        assert text in str(e.value), str(e.value)
    return e.value


def test_bad_magic_keeps_what_came_before():
    f = good()
    data = b"".join(frame(t, p, i, magic=b"SLWX" if i == 2 else records.MAGIC)
                    for i, (t, p) in enumerate(f))
    e = bad(data, "bad magic")
    assert e.partial.frames == 2 and len(e.partial.waits) == 3   # META, cpu 0's WAITS


def test_bad_version():
    data = b"".join(frame(t, p, i, version=2 if i == 1 else 1) for i, (t, p) in enumerate(good()))
    bad(data, "format version 2")


def test_unknown_type():
    f = good()
    f.insert(1, (9, b"x"))
    bad(f, "unknown frame type 9")


def test_checksum():
    data = bytearray(encode(good()))
    second = len(frame(records.META, meta(), 0))      # where the first WAITS frame begins
    data[second + records.HEADER_SIZE + 9] ^= 0x40     # a bit of the first wait's lock
    e = bad(bytes(data), "WAITS frame 1: checksum")
    assert e.partial.frames == 1 and not e.partial.waits


def test_oversized_length():
    data = encode(good()[:1]) + frame(W, b"", 1, length=records.MAX_PAYLOAD + 1)
    bad(data, "more than")


def test_sequence_gap():
    data = b"".join(frame(t, p, i + (i >= 2)) for i, (t, p) in enumerate(good()))
    bad(data, "sequence number 3, expected 2")


def test_meta_first_and_once():
    f = good()
    bad(f[1:], "begins with a WAITS frame")
    bad([f[0], f[0]] + f[1:], "second META")


def test_meta_checked():
    bad([(records.META, meta(ncpus=0))], "ncpus 0")
    bad([(records.META, meta(symbol="queued_spin_lock"))], "symbol 'queued_spin_lock'")
    m = meta()
    del m["kernel_release"]
    bad([(records.META, m)], "META has no 'kernel_release'")
    bad([(records.META, meta(ncpus="2"))], "'ncpus' is '2'")
    bad([(records.META, b"{not json")], "not JSON")


def test_cpu_beyond_vcpus():
    f = good()
    f[1] = (W, wait_bytes(waits(0, 2) + [(2, 0, 0, 1, 10, 20)]))
    e = bad(f, "record 2: cpu 2, but the guest has 2 CPUs")
    assert e.partial.frames == 1


def test_end_before_start():
    f = good()
    f[1] = (W, wait_bytes([(0, 0, 0, 1, 500, 499)]))
    bad(f, "ends at 499, before its start 500")


def test_wait_record_size():
    f = good()
    f[1] = (W, wait_bytes(waits(0, 3)) + b"\0" * 8)
    bad(f, "not a positive multiple of 32")
    f[1] = (W, b"")
    bad(f, "WAITS frame of 0 bytes")


def test_reserved_flags_and_depth():
    f = good()
    f[1] = (W, wait_bytes([(0, 0, 1, 1, 1, 2)] * 3))
    bad(f, "reserved flags")
    f[1] = (W, wait_bytes([(0, 40, 0, 1, 1, 2)] * 3))
    bad(f, "nesting depth 40")


def test_cpu_frame_counts_must_match_the_waits():
    f = good()
    f[2] = (records.CPU, cpu_frame(0, 4))            # 3 waits were sent for cpu 0
    e = bad(f, "cpu 0: its CPU frame counts 4 waits, the stream had 3")
    assert len(e.partial.waits) == 3


def test_cpu_frame_internal_counts():
    f = good()
    f[2] = (records.CPU, cpu_frame(0, 3, entries=5, unparsed=1))
    bad(f, "cpu 0: the ring buffer held 5 events and gave 0 to a reader, the agent read 3 begins, "
           "3 ends and 1 other")
    # read live (spinlab.region=1): the events left the buffer through its trace_pipe
    f[2] = (records.CPU, cpu_frame(0, 3, entries=0, read_events=6))
    records.parse(encode(f))
    f[2] = (records.CPU, cpu_frame(0, 3, entries=1, read_events=6))
    bad(f, "held 1 events and gave 6 to a reader")
    f[2] = (records.CPU, cpu_frame(0, 3, entries=0, read_events=-6))
    bad(f, "read_events -6 is not a count")
    f[2] = (records.CPU, cpu_frame(0, 3, begins=5, unpaired_begin=1))
    bad(f, "cpu 0: 5 begins but 3 waits and 1 unpaired begins")
    f[2] = (records.CPU, cpu_frame(0, 3, ends=3, unpaired_end=2))
    bad(f, "unpaired ends")
    f[2] = (records.CPU, cpu_frame(0, 3, dropped=-1))
    bad(f, "'dropped' is -1, not a count")


def test_cpu_frame_twice_and_waits_after_it():
    f = good()
    bad(f[:3] + [f[2]] + f[3:], "a second CPU frame for cpu 0")
    f2 = good()
    f2.insert(3, (W, wait_bytes(waits(0, 1))))
    bad(f2, "a wait on cpu 0 after its CPU frame")


def test_trailer_counts():
    f = good()
    t = dict(f[-1][1], waits=6)
    bad(f[:-1] + [(records.TRAILER, t)], "the trailer counts 6 waits, the stream had 5")
    t = dict(f[-1][1], frames=3)
    bad(f[:-1] + [(records.TRAILER, t)], "trailer counts 3 frames")
    t = dict(f[-1][1], window={"tsc_start": 10, "tsc_end": 5, "ns": 1})
    bad(f[:-1] + [(records.TRAILER, t)], "window ends before it starts")


def test_missing_cpu_frame():
    f = good()
    del f[4]                                          # cpu 1's CPU frame
    t = trailer(len(f) - 1, 5, 2)
    bad(f[:-1] + [(records.TRAILER, t)], "counts 2 CPU frames, the stream had 1")


def test_truncated_stream_keeps_the_waits_before():
    data = encode(good())
    cut = data[:len(data) - 30]                      # inside the trailer
    e = bad(cut, "without its trailer", "cut inside a frame")
    assert len(e.partial.waits) == 5 and not e.partial.complete
    e = bad(encode(good()[:3]), "without its trailer")
    assert len(e.partial.waits) == 3 and e.partial.frames == 3


def test_nothing_after_the_trailer():
    bad(encode(good()) + b"\0\0", "2 bytes after the trailer")
    f = good()
    bad(f + [(W, wait_bytes(waits(0, 1)))], "a WAITS frame after the trailer")


def test_guest_error_frame():
    f = good()[:2] + [(records.ERROR, b"native_queued_spin_lock_slowpath is in the kprobe blacklist")]
    e = bad(f, "the guest reported an error: native_queued_spin_lock_slowpath is in the kprobe")
    assert e.partial.guest_error.startswith("native_queued")
    assert len(e.partial.waits) == 3


def test_trailer_seen():
    data = encode(good())
    assert records.trailer_seen(data)
    assert not records.trailer_seen(data[:-1])
    assert not records.trailer_seen(encode(good()[:-1]))


def test_log2_bucket_as_lockstat():
    assert [records.log2_bucket(v) for v in (0, 1, 2, 3, 4, 1023, 1024, 1 << 20, (1 << 64) - 1)] \
        == [0, 0, 1, 1, 2, 9, 10, 20, 63]


def test_histograms_and_summary():
    run = records.parse(encode(good()))
    h = records.histograms(run.waits, 2)
    assert h[0][12] == 3 and sum(h[0]) == 3          # 5000 cycles: 2^12 <= 5000 < 2^13
    assert h[1][21] == 2 and sum(h[1]) == 2
    s = records.summary(run)
    assert s["waits"] == 5 and s["long_waits"] == 2 and s["long_share"] == pytest.approx(0.4)
    assert s["waits_per_s"] == pytest.approx(5.0)
    assert s["histograms"]["1"][21] == 2
    assert s["lost_events"] == 0 and s["unpaired_begin"] == 0 and s["uncounted_losses"] == 0


def test_ab_phases():
    f = good()
    phases = [{"traced": False, "ops": 100, "ns": 1_000_000_000},
              {"traced": True, "ops": 90, "ns": 1_000_000_000},
              {"traced": False, "ops": 50, "ns": 500_000_000},
              {"traced": True, "ops": 45, "ns": 500_000_000}]
    run = records.parse(encode(f[:-1] + [(records.TRAILER, dict(f[-1][1], ab=phases))]))
    ab = records.summary(run)["ab"]
    assert ab["ratio"] == pytest.approx(0.9) and ab["pair_ratios"] == pytest.approx([0.9, 0.9])
    assert records.summary(run)["waits_per_s"] == pytest.approx(5 / 1.5)   # traced time only
    bad(f[:-1] + [(records.TRAILER, dict(f[-1][1], ab=phases[:3]))], "even, non-empty list")
    swapped = [dict(p, traced=not p["traced"]) for p in phases]
    bad(f[:-1] + [(records.TRAILER, dict(f[-1][1], ab=swapped))], "ab phase 0")
