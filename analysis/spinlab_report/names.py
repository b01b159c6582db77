"""The guest ABI's enum names (LHP classes, lock algorithms, clock sources, ...), read at import.

The one spelling of each name is the C++ table of its enum in kernel-patch/abi/spinlab/ (the
*_name() functions, the kernel's boot options and spinlab-run's spec choices come from the same
tables). The build writes those tables out as abi_names.json (the spinlab-abi-names target; see
kernel-patch/abi/names.cmake, and abi_names.cc beside it for the file's shape); this module reads
that file, so Python never spells a name again: code names an enum's value by its C++
enumerator, e.g. LHP_CLASS.kHolderPreempted is "holder-preempted".

Where the file is looked for, first found wins:
  1. $SPINLAB_ABI_NAMES, when set (a build directory other than build/host);
  2. beside this module (an installation: share/spinlab/analysis/spinlab_report/abi_names.json);
  3. the source tree's build: <repo>/build/host/abi_names.json.
A missing or malformed file is a NamesFileError at import naming the paths and the make target.
"""
import json
import os

from . import NamesFileError  # defined in __init__, so that a caller can catch it around the import

FILE_NAME = "abi_names.json"
BUILD_TARGET = "spinlab-abi-names"
_HERE = os.path.dirname(os.path.abspath(__file__))


class AbiEnum:
    """One ABI enum: .names in the order of its values (0, 1, ...), and each name as an attribute
    under the C++ enumerator's name (LHP_CLASS.kBoth)."""

    def __init__(self, key: str, entries: list, path: str):
        self.key = key
        self.names = tuple(e["name"] for e in entries)
        self._by_id = {e["id"]: e["name"] for e in entries}
        self._path = path

    def __getattr__(self, ident: str) -> str:
        if ident.startswith("_"):
            raise AttributeError(ident)
        try:
            return self._by_id[ident]
        except KeyError:
            raise AttributeError(f"ABI enum {self.key} has no enumerator {ident} in {self._path} "
                                 f"(it has {', '.join(self._by_id)})") from None

    @classmethod
    def of_ids(cls, key: str, by_id: dict, path: str) -> "AbiEnum":
        """A table given as {C++ identifier: name}, in its order (results_contract.json's keys)."""
        return cls(key, [{"value": i, "id": ident, "name": name} for i, (ident, name) in enumerate(by_id.items())],
                   path)

    def __iter__(self):
        return iter(self.names)

    def __len__(self):
        return len(self.names)


def candidates() -> list[str]:
    """The paths looked at, in order (see the module's docstring)."""
    out = [os.environ["SPINLAB_ABI_NAMES"]] if os.environ.get("SPINLAB_ABI_NAMES") else []
    return out + [os.path.join(_HERE, FILE_NAME),
                  os.path.normpath(os.path.join(_HERE, "..", "..", "build", "host", FILE_NAME))]


def _missing() -> NamesFileError:
    return NamesFileError(
        f"{FILE_NAME} (the ABI's enum names, written by the build) is missing: looked in "
        f"{', '.join(candidates())}. Build it with `make host` (or `cmake --build build/host --target "
        f"{BUILD_TARGET}`), or point SPINLAB_ABI_NAMES at it")


def _entries(path: str, data: dict, key: str) -> list:
    entries = data.get("enums", {}).get(key)
    ok = isinstance(entries, list) and entries and all(
        isinstance(e, dict) and isinstance(e.get("id"), str) and isinstance(e.get("name"), str)
        and e.get("value") == i for i, e in enumerate(entries))
    if not ok:
        raise NamesFileError(f"{path}: enum '{key}' is missing or not a list of {{value: 0, 1, ..., id, name}}; "
                             f"rebuild it with `cmake --build build/host --target {BUILD_TARGET}`")
    return entries


def load(path: str | None = None) -> dict:
    """The file's enums as {key: AbiEnum}; path None: the first of candidates() that exists."""
    path = path or next((p for p in candidates() if os.path.isfile(p)), None)
    if path is None:
        raise _missing()
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise NamesFileError(f"{path}: cannot read the ABI's names: {e}") from e
    if not isinstance(data, dict) or not isinstance(data.get("enums"), dict):
        raise NamesFileError(f"{path}: expected an object with 'enums' (written by {BUILD_TARGET})")
    return {key: AbiEnum(key, _entries(path, data, key), path) for key in data["enums"]}


def constant(path: str | None, key: str) -> int:
    """One of the file's "constants" (the ABI's defaults Python uses too), an int >= 0."""
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f).get("constants", {}).get(key)
    except (OSError, ValueError, AttributeError) as e:
        raise NamesFileError(f"{path}: cannot read the ABI's constants: {e}") from e
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise NamesFileError(f"{path}: constant '{key}' is missing; rebuild it with "
                             f"`cmake --build build/host --target {BUILD_TARGET}`")
    return value


def _need(enums: dict, key: str) -> AbiEnum:
    if key not in enums:
        raise NamesFileError(f"{PATH}: enum '{key}' is missing; rebuild it with "
                             f"`cmake --build build/host --target {BUILD_TARGET}`")
    return enums[key]


PATH = next((p for p in candidates() if os.path.isfile(p)), None)
_ENUMS = load(PATH)
LHP_CLASS = _need(_ENUMS, "lhp_class")              # perfdata.h LhpClass
LOCK_ALGORITHM = _need(_ENUMS, "lock_algorithm")    # LockAlgorithm (boot option lock=)
CLOCK_SOURCE = _need(_ENUMS, "clock_source")        # ClockSource (boot option clock=)
INSTRUMENT_LEVEL = _need(_ENUMS, "instrument_level")
TRACE_LOGGER_MODE = _need(_ENUMS, "trace_logger_mode")  # trace.h TraceLoggerMode ([trace] mode)
ACQUISITIONS_COUNTED = _need(_ENUMS, "acquisitions_counted")  # perfdata.h (snapshot cpus[].acquisitions_counted)
PREEMPTOR_CLASS = _need(_ENUMS, "preemptor_class")  # preemptor.h PreemptorClass (timeline.csv preemptor)
# The long-wait threshold (spinlab/sysinfo.h kDefaultLongWaitThreshold, [vm] long-wait): the
# kernel's default long-wait= and the report's default --threshold, one number.
LONG_WAIT_THRESHOLD = constant(PATH, "long_wait_threshold")
