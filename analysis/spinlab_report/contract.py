"""The results-directory contract, format 1 (written out in analysis/README.md).

Only names and checks live here; reader.py reads the files. A ContractError is the one error the
CLI turns into a message and a non-zero exit: the text says which file and which field.
"""
import json
import os

from .names import ACQUISITIONS_COUNTED, LHP_CLASS

FORMAT = 1
META, STATUS, SPEC, TIMELINE, CLOCK = "meta.json", "status.json", "spec.ini", "timeline.csv", "clock.json"
SNAPSHOT_DIR = "snapshots"
# The guest's LHP classes in the ABI's order, as its table spells them (perfdata.h, read through
# names.py), which is what the collector and the runner write: no name is spelled again here.
LHP_CLASSES = LHP_CLASS.names
# A lock class's counters (collector/report_format.h perf_json): required counts, optional
# counts, and the two histograms, sparse {"k": count} over buckets k = 0 .. 63.
CLASS_COUNTS = ("acquisitions", "uncontended", "wait_overflow")
CLASS_OPTIONAL_COUNTS = ("wait_cycles_sum", "wait_cycles_max", "holds_timed", "hold_overflow",
                         "hold_cycles_sum", "hold_cycles_max", "long_holds")
CLASS_HISTOGRAMS = ("wait_hist", "hold_hist")
# A CPU's paravirtual-lock counters (lock=pvqspin; perfdata.h PvLockCounters, collector/
# report_format.h pv_fields): optional per CPU (older results have none), all four or none.
PV_COUNTS = ("pv_halts", "pv_kicks", "pv_spurious_wakeups", "pv_steals")
# What a CPU's `acquisitions` count (perfdata.h AcquisitionsCounted, by its names): optional per
# CPU, older results have none and counted every acquisition. A Linux guest's probe counts
# contended ones only, and its tables say so.
ACQUISITIONS_COUNTED_KEY = "acquisitions_counted"
EVERY_ACQUISITION = ACQUISITIONS_COUNTED.kEveryAcquisition
CONTENDED_ONLY = ACQUISITIONS_COUNTED.kContendedOnly
# A snapshot's trace session (the runner's "trace" object): the loss counters under the ABI's
# names (spinlab/trace.h TraceLossCounters: EventsLost, BuffersWritten, LogBuffersLost,
# RealTimeBuffersLost, and the attempted/written pair), in total ("loss") and per CPU ("cpus").
TRACE_LOSS_COUNTS = ("events_attempted", "events_written", "events_lost", "buffers_written",
                     "log_buffers_lost", "realtime_buffers_lost")
TRACE_COUNTS = ("session_id", "buffer_size", "minimum_buffers", "maximum_buffers", "flush_timer_ms",
                "profile_interval", "buffers_per_cpu", "events", "buffers", "damaged_frames")
TIMELINE_COLUMNS = ("vcpu", "tid", "state", "start_host_tsc", "end_host_tsc", "phase", "rep")
OFF_STATES = ("off", "frozen")  # a vCPU thread in these states was not running guest code
UNKNOWN_STATE = "unknown"       # a switch the host kernel did not trace: either on or off
TIMELINE_STATES = ("on",) + OFF_STATES + (UNKNOWN_STATE,)


class ContractError(Exception):
    """A file of the results directory does not follow the contract."""


def snapshot_name(phase: str, rep: int) -> str:
    return f"{phase}-r{rep}.json"


def read_json(path: str, required: bool = True) -> dict | None:
    """Parse a contract JSON file: an object whose "format", when present, is FORMAT."""
    name = os.path.basename(path)
    if not os.path.exists(path):
        if required:
            raise ContractError(f"{name} is missing in {os.path.dirname(path) or '.'}")
        return None
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, UnicodeDecodeError) as e:
        raise ContractError(f"{name}: cannot read: {e}") from e
    except json.JSONDecodeError as e:
        raise ContractError(f"{name}: not valid JSON ({e.msg} at line {e.lineno})") from e
    if not isinstance(data, dict):
        raise ContractError(f"{name}: expected a JSON object, got {type(data).__name__}")
    fmt = data.get("format", FORMAT)
    if fmt != FORMAT:
        raise ContractError(f"{name}: format {fmt!r} is not supported (this reader knows format {FORMAT})")
    return data


def need(obj: dict, key: str, kind, where: str):
    """obj[key], checked to be of `kind`; bools are not accepted as numbers."""
    if not isinstance(obj, dict) or key not in obj:
        raise ContractError(f"{where}: field '{key}' is missing")
    value = obj[key]
    bad_bool = isinstance(value, bool) and kind is not bool and bool not in (kind if isinstance(kind, tuple) else (kind,))
    if bad_bool or not isinstance(value, kind):
        names = "/".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise ContractError(f"{where}: field '{key}' must be {names}, got {value!r}")
    return value


def need_count(obj: dict, key: str, where: str) -> int:
    value = need(obj, key, int, where)
    if value < 0:
        raise ContractError(f"{where}: field '{key}' must be >= 0, got {value}")
    return value
