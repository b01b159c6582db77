"""Ground-truth sets and the clock check against off-CPU records, on hand-made waits."""
from spinlab_report.ground_truth import rates, stamps_off_cpu

# host = guest + 1000, to within +-10 cycles, over guest [0, 10M]
CLOCK = {"offset_cycles": 1000, "drift_ppm": 0.0, "ref_guest_tsc": 0, "bound_max_cycles": 10.0,
         "points": [[0, 1000, 10.0], [10_000_000, 1000, 10.0]]}


def long_wait(cpu, start_guest, cycles):
    return {"cpu": cpu, "start_tsc": start_guest, "wait_cycles": cycles}


def test_stamps_inside_an_off_window_beyond_the_bound_are_counted():
    off = {1: [(2000, 3000)]}
    waits = [long_wait(1, 500, 1000),    # host [1500, 2500]: the end is 490 cycles inside, past the bound
             long_wait(1, 1995, 10),     # host 2995 and 3005: within the bound of the edge, not counted
             long_wait(0, 1500, 10)]     # vCPU 0 has no record: not a stamp here
    assert stamps_off_cpu(waits, off, CLOCK) == {"stamps": 4, "inside": 1, "worst_cycles": 490.0}
    # through a clock 600 cycles late the first wait is host [2100, 3100]: its start falls inside
    late = {**CLOCK, "points": [[g, o + 600, h] for g, o, h in CLOCK["points"]]}
    assert stamps_off_cpu(waits, off, late) == {"stamps": 4, "inside": 1, "worst_cycles": 90.0}
    # with 100 cycles of slack beyond the bound, neither is counted; the deepest is still said
    assert stamps_off_cpu(waits, off, late, slack=100) == {"stamps": 4, "inside": 0, "worst_cycles": 90.0}
    # outside the sampled span the clock places nothing
    assert stamps_off_cpu([long_wait(1, 20_000_000, 10)], off, CLOCK)["stamps"] == 0


def classified(cpu, holder, host_start, cycles, cause, holder_off, side, waiter_off=None):
    """A wait as waits.long_waits_share gives it, both sides measured on the timeline."""
    waiter_side = "unknown" if waiter_off is None else "off" if waiter_off[0] >= cycles / 2 else \
        "on" if waiter_off[1] < cycles / 2 else "uncertain"
    return {"holder_source": "timeline", "cpu": cpu, "holders": [holder], "host_start": host_start,
            "bound_cycles": 10.0, "wait_cycles": cycles, "cause": cause, "holder_off_cycles": holder_off,
            "holder_side": side or "uncertain", "waiter_off_cycles": waiter_off, "waiter_side": waiter_side}


def test_frozen_and_running_sets():
    windows = [(10_000, 40_000)]
    waits = [classified(1, 0, 9_000, 30_000, "holder-preempted", [29_000, 30_000], "off"),  # frozen 29k of 30k
             classified(1, 0, 9_000, 30_000, "uncertain", [29_000, 30_000], "off"),         # waiter side only
             classified(1, 0, 50_000, 1000, "neither", [0, 50], "on"),                      # ran 95%: running
             classified(1, 0, 60_000, 1000, "neither", [0, 200], "on"),                     # ran 80%: neither set
             classified(1, 0, 39_000, 2000, "both", [1000, 1000], "off"),                   # half frozen: neither
             classified(0, 1, 9_000, 30_000, "waiter-preempted", [0, 0], "on")]             # frozen waiter: neither
    g = rates(waits, windows, 0)
    assert (g["frozen"], g["frozen_holder_off"], g["frozen_holder_preempted"]) == (2, 2, 1)
    assert (g["running"], g["running_holder_off"], g["running_rate"]) == (1, 0, 0.0)


def test_frozen_waiter_set():
    windows = [(10_000, 40_000)]
    waits = [classified(0, 1, 9_000, 30_000, "waiter-preempted", [0, 0], "on", [29_000, 30_000]),   # frozen waiter
             classified(0, 1, 9_000, 30_000, "both", [20_000, 20_000], "off", [29_000, 30_000]),     # holder off too
             classified(0, 1, 9_000, 30_000, "uncertain", [14_000, 16_000], None, [29_000, 30_000]),  # holder side only
             classified(0, 1, 9_000, 30_000, "neither", [0, 0], "on", [0, 100]),                     # wrongly 'neither'
             classified(0, 1, 39_000, 2000, "neither", [0, 0], "on", [1000, 1000]),                  # half frozen: not in the set
             classified(1, 0, 9_000, 30_000, "holder-preempted", [29_000, 30_000], "off", [0, 0])]  # other vCPU's wait
    g = rates(waits, windows, 0)
    assert (g["frozen_waiter"], g["frozen_waiter_off"], g["frozen_waiter_rate"]) == (4, 3, 0.75)
    assert g["frozen_waiter_classes"] == {"waiter-preempted": 1, "both": 1, "uncertain": 1, "neither": 1}
    assert g["frozen"] == 1  # the holder-side sets are unchanged by it
