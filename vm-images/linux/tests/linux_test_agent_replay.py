"""The agent's trace reading and pairing, on the host: `spinlab-agent --replay` reads trace text
files (one per CPU, as tracefs prints per_cpu/cpuN/trace) and writes the stream the guest would
send; the host's reader checks it. No QEMU."""
import subprocess

import pytest
from linux_testlib import agent  # noqa: F401  (a fixture)

from spinlab_linux import records

HEADER = """# tracer: nop
#
# entries-in-buffer/entries-written: 4/4   #P:2
#
#                                _-----=> irqs-off/BH-disabled
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
"""


def begin(ts, lock, comm="hackbench-100", cpu=0, flags="d..2."):
    return (f"   {comm:>16}     [{cpu:03d}] {flags}  {ts}: wait_begin: "
            f"(native_queued_spin_lock_slowpath+0x0/0x2a0) lock={lock:#x}\n")


def end(ts, comm="hackbench-100", cpu=0, flags="d..2."):
    return (f"   {comm:>16}     [{cpu:03d}] {flags}  {ts}: wait_end: "
            f"(_raw_spin_lock+0x25/0x30 <- native_queued_spin_lock_slowpath)\n")


def replay(agent, tmp_path, *cpu_texts, gaps=()):
    files = [a for g in gaps for a in ("--gap", f"{g[0]}:{g[1]}")]
    for i, text in enumerate(cpu_texts):
        p = tmp_path / f"cpu{i}.trace"
        p.write_text(HEADER + text)
        files.append(str(p))
    r = subprocess.run([str(agent), "--replay", *files], capture_output=True, timeout=30)
    return records.parse(r.stdout)


def test_pairs_in_order(agent, tmp_path):
    run = replay(agent, tmp_path,
                 begin(100, 0xffff888000a0) + end(350) + begin(1000, 0xffff888000b0) + end(1010),
                 begin(200, 0xffffffff82b27f58, comm="rcu_preempt-15", cpu=1) +
                 end(2_000_200, comm="rcu_preempt-15", cpu=1))
    assert [(w.cpu, w.depth, w.lock, w.start, w.end) for w in run.waits] == [
        (0, 0, 0xffff888000a0, 100, 350), (0, 0, 0xffff888000b0, 1000, 1010),
        (1, 0, 0xffffffff82b27f58, 200, 2_000_200)]
    assert run.cpus[0]["begins"] == 2 and run.cpus[0]["unpaired_begin"] == 0
    assert run.cpus[1]["first_ts"] == 200 and run.cpus[1]["last_ts"] == 2_000_200


def test_a_wait_inside_a_wait_nests(agent, tmp_path):
    # An interrupt on CPU 0 takes another lock while the task waits for the first: the inner
    # wait ends first and pairs with the inner begin; the outer keeps its own start.
    text = (begin(100, 0xa0) + begin(150, 0xb0, flags="d.h2.") + end(180, flags="d.h2.") +
            end(400))
    run = replay(agent, tmp_path, text)
    assert [(w.depth, w.lock, w.start, w.end) for w in run.waits] == [
        (1, 0xb0, 150, 180), (0, 0xa0, 100, 400)]
    c = run.cpus[0]
    assert c["nested"] == 1 and c["max_depth"] == 2
    assert records.summary(run)["nested_waits"] == 1


def test_unpaired_events_are_counted_not_guessed(agent, tmp_path):
    # An end whose begin came before tracing started, and a begin still open when it stopped.
    text = end(50) + begin(100, 0xa0) + end(200) + begin(300, 0xb0)
    run = replay(agent, tmp_path, text, "")
    assert [(w.start, w.end) for w in run.waits] == [(100, 200)]
    c = run.cpus[0]
    assert (c["begins"], c["ends"], c["unpaired_begin"], c["unpaired_end"]) == (2, 2, 1, 1)
    assert run.cpus[1]["waits"] == 0


def test_lost_markers_and_foreign_lines(agent, tmp_path):
    text = (begin(100, 0xa0) + "CPU:0 [LOST 17 EVENTS]\n" + end(200) +
            "          <idle>-0       [000] d..2.   250: something_else: x=1\n")
    run = replay(agent, tmp_path, text)
    assert len(run.waits) == 1
    assert run.cpus[0]["lost_markers"] == 1 and run.cpus[0]["unparsed"] == 1
    assert records.summary(run)["lost_events"] == 1


def test_comm_with_spaces_and_brackets(agent, tmp_path):
    text = begin(7, 0xa0, comm="my [odd] task-42") + end(9, comm="my [odd] task-42")
    run = replay(agent, tmp_path, text)
    assert [(w.start, w.end) for w in run.waits] == [(7, 9)]


def test_many_waits_span_frames(agent, tmp_path):
    text = "".join(begin(10 * i, 0x1000 + i) + end(10 * i + 5) for i in range(3000))
    run = replay(agent, tmp_path, text)
    assert len(run.waits) == 3000 and run.frames == 1 + 3 + 1 + 1   # META, 3 WAITS, CPU, TRAILER
    assert all(w.cycles == 5 for w in run.waits)


def test_an_end_before_its_begin_is_an_error(agent, tmp_path):
    with pytest.raises(records.StreamError, match="the guest reported an error: cpu 0: a wait "
                                                  "ends .* before it starts"):
        replay(agent, tmp_path, begin(500, 0xa0) + end(499))


def test_nothing_pairs_across_or_inside_a_gap(agent, tmp_path):
    # A/B: the probes were disarmed from 1000 to 2000. The wait open at 1000 lost its end
    # (cut); the events inside the gap come from half-armed probes; the end at 2100 has no
    # begin of its own after the gap. Only the waits wholly outside the gap pair.
    text = (begin(100, 0xa0) + end(200) +                    # before: a wait
            begin(900, 0xb0) +                              # open when the gap begins
            begin(1500, 0xc0) + end(1600) +                 # inside the gap
            end(2100) +                                     # its begin was before the gap
            begin(2200, 0xd0) + end(2300))                  # after: a wait
    run = replay(agent, tmp_path, text, gaps=[(1000, 2000)])
    assert [(w.start, w.end) for w in run.waits] == [(100, 200), (2200, 2300)]
    c = run.cpus[0]
    assert (c["cut"], c["in_gaps"], c["unpaired_begin"], c["unpaired_end"]) == (1, 2, 2, 2)
    assert c["nested"] == 0


def test_a_wait_open_before_a_gap_is_cut_even_without_events_inside(agent, tmp_path):
    text = begin(900, 0xb0) + end(2100) + begin(2200, 0xd0) + end(2300)
    run = replay(agent, tmp_path, text, gaps=[(1000, 2000)])
    assert [(w.start, w.end) for w in run.waits] == [(2200, 2300)]
    c = run.cpus[0]
    assert (c["cut"], c["in_gaps"], c["unpaired_begin"], c["unpaired_end"]) == (1, 0, 1, 1)
