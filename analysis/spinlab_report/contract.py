"""The results-directory contract, format 1 (written out in analysis/README.md).

Only names and checks live here; reader.py reads the files. A ContractError is the one error the
CLI turns into a message and a non-zero exit: the text says which file and which field.

Every key of the results' JSON files, every timeline.csv column and state, is spelled once, in
the C++ table hostlib/results_contract.h that the writers use; the build writes it out as
results_contract.json (target spinlab-results-contract) beside abi_names.json, and this module
reads it at import: K.<name> is a key (K.lock_class is "lock_class"), OBJECTS[object] the keys its writer
writes, TIMELINE_STATE and RUN_STATE the two value sets. Python spells none of them again; the
only names spelled here are those older results used (OLD_KEYS), which the reader still accepts.
Looked for: $SPINLAB_RESULTS_CONTRACT when set, else beside the abi_names.json names.py found.
"""
import json
import os

from . import NamesFileError
from . import names
from .names import ACQUISITIONS_COUNTED, LHP_CLASS, AbiEnum

RESULTS_CONTRACT_FILE = "results_contract.json"
RESULTS_CONTRACT_TARGET = "spinlab-results-contract"


def _contract_path() -> str:
    if os.environ.get("SPINLAB_RESULTS_CONTRACT"):
        return os.environ["SPINLAB_RESULTS_CONTRACT"]
    return os.path.join(os.path.dirname(names.PATH or "."), RESULTS_CONTRACT_FILE)


def _load_contract(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise NamesFileError(f"{path}: cannot read the results' names ({e}); build them with `make host` "
                             f"(or `cmake --build build/host --target {RESULTS_CONTRACT_TARGET}`), or point "
                             f"SPINLAB_RESULTS_CONTRACT at them") from e
    ok = (isinstance(data, dict) and isinstance(data.get("keys"), dict) and isinstance(data.get("objects"), dict)
          and isinstance(data.get("enums"), dict))
    if not ok:
        raise NamesFileError(f"{path}: expected keys, objects and enums (written by {RESULTS_CONTRACT_TARGET})")
    return data


CONTRACT_PATH = _contract_path()
_CONTRACT = _load_contract(CONTRACT_PATH)
# The results' keys as attributes under their C++ names (K.phase, K.lock_class); iterating gives
# their spellings.
K = AbiEnum.of_ids("results_key", _CONTRACT["keys"], CONTRACT_PATH)
OBJECTS = {name: tuple(keys) for name, keys in _CONTRACT["objects"].items()}
TIMELINE_STATE = AbiEnum("timeline_state", _CONTRACT["enums"]["timeline_state"], CONTRACT_PATH)
RUN_STATE = AbiEnum("run_state", _CONTRACT["enums"]["run_state"], CONTRACT_PATH)
HALT_KIND = AbiEnum("halt_kind", _CONTRACT["enums"]["halt_kind"], CONTRACT_PATH)
# Names that older results used for what the table now calls otherwise: the reader takes the old
# name where the new one is missing (the only results names spelled in Python). meta.json's
# freeze injector priority was preempt_rt_priority before issue 53 (the injector was
# `spinlab-load preempt`); a long wait's lock class was `class` before issue 53.
OLD_KEYS = {K.long_wait_threshold: "long_waits_min_cycles", K.freeze_rt_priority: "preempt_rt_priority",
            K.lock_class: "class"}


def renamed_key(obj: dict, key: str) -> str:
    """The name obj holds key's value under: key, or its old name (OLD_KEYS) where only that is
    there (key where neither is, for the message that it is missing)."""
    old = OLD_KEYS.get(key)
    return old if key not in obj and old is not None and old in obj else key


def get_renamed(obj: dict, key: str, default=None):
    """obj[key], or where an older result wrote it under its old name (OLD_KEYS), that."""
    return obj.get(renamed_key(obj, key), default)

FORMAT = 1
META, STATUS, SPEC, TIMELINE, CLOCK = "meta.json", "status.json", "spec.ini", "timeline.csv", "clock.json"
HALTS = "halts.csv"  # the guest's halt spans (a guest that records them: spinlab's kernel)
SNAPSHOT_DIR = "snapshots"
# The guest's LHP classes in the ABI's order, as its table spells them (perfdata.h, read through
# names.py), which is what the collector and the runner write: no name is spelled again here.
LHP_CLASSES = LHP_CLASS.names
# A lock class's counters (collector/report_format.h perf_json): required counts, optional
# counts, and the two histograms, sparse {"k": count} over buckets k = 0 .. 63.
CLASS_COUNTS = (K.acquisitions, K.uncontended, K.wait_overflow)
CLASS_HISTOGRAMS = (K.wait_hist, K.hold_hist)
CLASS_OPTIONAL_COUNTS = tuple(k for k in OBJECTS["class_perf"]
                              if k not in CLASS_COUNTS + CLASS_HISTOGRAMS + (K.lhp,))
# A CPU's paravirtual-lock counters (lock=pvqspin; perfdata.h PvLockCounters, collector/
# report_format.h pv_fields): optional per CPU (older results have none), all four or none.
PV_COUNTS = OBJECTS["pv"]
# What a CPU's `acquisitions` count (perfdata.h AcquisitionsCounted, by its names): optional per
# CPU, older results have none and counted every acquisition. A Linux guest's probe counts
# contended ones only, and its tables say so.
ACQUISITIONS_COUNTED_KEY = K.acquisitions_counted
EVERY_ACQUISITION = ACQUISITIONS_COUNTED.kEveryAcquisition
CONTENDED_ONLY = ACQUISITIONS_COUNTED.kContendedOnly
# A snapshot's trace session (the runner's "trace" object): the loss counters under the ABI's
# names (spinlab/trace.h TraceLossCounters: EventsLost, BuffersWritten, LogBuffersLost,
# RealTimeBuffersLost, and the attempted/written pair), in total ("loss") and per CPU ("cpus").
TRACE_LOSS_COUNTS = OBJECTS["trace_loss"]
# The session's texts (enable_flags, logger_mode) and the file, flag, loss and per-CPU objects
# are read on their own; every other key of the trace object is a count.
TRACE_TEXTS = (K.file, K.enable_flags, K.logger_mode)
TRACE_COUNTS = tuple(k for k in OBJECTS["snapshot_trace"]
                     if k not in TRACE_TEXTS + (K.counters_found, K.loss, K.cpus))
# timeline.csv's columns that every timeline has (the rest came later: start_ns, ..., preemptor_comm).
TIMELINE_COLUMNS = OBJECTS["timeline"][:7]
OFF_STATES = (TIMELINE_STATE.kOff, TIMELINE_STATE.kFrozen)  # not running guest code
UNKNOWN_STATE = TIMELINE_STATE.kUnknown  # a switch the host kernel did not trace: either on or off
TIMELINE_STATES = TIMELINE_STATE.names
# halts.csv's columns and each row's kind: halted (a span; no exit: still halted at the last
# read), lost (the vCPU may have halted anywhere in the span) or refused (from enter on, nothing).
HALTS_COLUMNS = OBJECTS["halts"]


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
    fmt = data.get(K.format, FORMAT)
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
