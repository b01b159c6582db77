"""A sweep spec: an experiment spec plus a [sweep] section naming the axes (pure).

    [vm]
    cpus = 2
    ...
    [sweep]
    vm.lock = tas, ticket, mcs, pv
    vm.cpus = 2, 4
    id = locks            # optional: the sweep's name (default: the spec file's stem)

Every key of [sweep] other than `id` is an axis: a runner option `SECTION.KEY` and its values,
comma-separated. A value that is itself a list (run.phases) joins its items with '+':
`run.phases = idle-host+host-load, idle-host+preempt-30ms`. The cells are the cartesian product
of the axes, in the order the axes are written (the last one varies fastest). Each cell is the
base spec (the file without [sweep]) with the axis values as command-line overrides, so a cell is
an ordinary `spinlab-run` that can be rerun by hand.
"""
import itertools
import re
from dataclasses import dataclass, field

SECTIONS = ("vm", "workload", "run", "output")
RESERVED = {"output.dir", "output.run-id"}  # the sweep decides where each cell writes
_KEY = re.compile(r"^([a-z]+)\.([a-z][a-z0-9-]*)$")
_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


class SweepError(Exception):
    """A sweep spec that cannot run; the message names the line, key or value."""


@dataclass
class Axis:
    key: str  # runner option without the leading dashes, e.g. "vm.lock"
    values: list

    @property
    def short(self) -> str:
        """The key's last part (lock, cpus, phases): used in cell ids and figure labels."""
        return self.key.split(".", 1)[1]


@dataclass
class Cell:
    id: str
    values: dict  # axis key -> value, in axis order

    def overrides(self) -> list:
        """The runner's command-line options for this cell's axis values."""
        args = []
        for key, value in self.values.items():
            args += [f"--{key}", value.replace("+", ",") if key == "run.phases" else value]
        return args


@dataclass
class SweepSpec:
    name: str
    base_text: str  # the spec without its [sweep] section: what every cell runs
    axes: list
    cells: list = field(default_factory=list)


def split_sweep_section(text: str) -> tuple[str, list]:
    """The spec text without [sweep], and [sweep]'s (line number, key, value) entries."""
    base, entries, in_sweep = [], [], False
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            in_sweep = stripped[1:-1].strip() == "sweep"
            if in_sweep:
                continue
        if not in_sweep:
            base.append(line)
            continue
        if not stripped or stripped.startswith(("#", ";")):
            continue
        if "=" not in stripped:
            raise SweepError(f"[sweep] line {n}: '{stripped}' is not 'key = value, value, ...'")
        key, value = (part.strip() for part in stripped.split("=", 1))
        entries.append((n, key, value))
    return "\n".join(base) + "\n", entries


def _cell_part(axis: Axis, value: str) -> str:
    part = re.sub(r"[^A-Za-z0-9_.-]+", "_", value.replace("+", "_").replace("%", "pct"))
    return f"{axis.short}-{part}"


def expand(axes: list) -> list:
    """Every combination of the axes' values as a Cell, last axis fastest."""
    cells = []
    for combo in itertools.product(*(a.values for a in axes)):
        values = {a.key: v for a, v in zip(axes, combo)}
        cid = "_".join(_cell_part(a, v) for a, v in zip(axes, combo)) or "single"
        cells.append(Cell(cid, values))
    ids = [c.id for c in cells]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise SweepError(f"axis values give the same cell id twice ({dup[0]}): make the values distinct")
    return cells


def parse(text: str, default_name: str) -> SweepSpec:
    """Parse a sweep spec's text; raise SweepError naming what is wrong."""
    base, entries = split_sweep_section(text)
    if not entries:
        raise SweepError("the spec has no [sweep] section with at least one axis (e.g. 'vm.lock = tas, ticket')")
    name, axes, seen = default_name, [], set()
    for n, key, value in entries:
        if key == "id":
            if not _ID.match(value):
                raise SweepError(f"[sweep] line {n}: id '{value}' must be letters, digits, '.', '-' or '_'")
            name = value
            continue
        m = _KEY.match(key)
        if not m or m.group(1) not in SECTIONS:
            raise SweepError(f"[sweep] line {n}: '{key}' is not an axis: write SECTION.KEY with SECTION one of "
                             f"{', '.join(SECTIONS)} (e.g. vm.lock)")
        if key in RESERVED:
            raise SweepError(f"[sweep] line {n}: '{key}' cannot be an axis: the sweep chooses each cell's output")
        if key in seen:
            raise SweepError(f"[sweep] line {n}: axis '{key}' is given twice")
        seen.add(key)
        values = [v.strip() for v in value.split(",")]
        if not value.strip() or any(not v for v in values):
            raise SweepError(f"[sweep] line {n}: axis '{key}' has an empty value in '{value}'")
        if len(set(values)) != len(values):
            raise SweepError(f"[sweep] line {n}: axis '{key}' repeats a value in '{value}'")
        axes.append(Axis(key, values))
    if not _ID.match(name):
        raise SweepError(f"the sweep's name '{name}' must be letters, digits, '.', '-' or '_': set [sweep] id")
    return SweepSpec(name, base, axes, expand(axes))
