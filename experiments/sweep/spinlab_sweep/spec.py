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
`run.phases = idle-host+host-load, idle-host+freeze-30ms`. The cells are the cartesian product
of the axes, in the order the axes are written (the last one varies fastest). Each cell is the
base spec (the file without [sweep]) with the axis values as command-line overrides, so a cell is
an ordinary `spinlab-run` that can be rerun by hand.

A set axis changes several options together: a key without a dot (say `workload`), whose
values each name a section `[sweep.KEY.VALUE]` of `SECTION.KEY = value` lines, the options
that value stands for (values may hold commas and spaces there):

    [sweep]
    workload = kmix, lockbench
    [sweep.workload.kmix]
    workload.program = kmix
    workload.throughput-classes = proc_table,address_space,pmm,heap
"""
import itertools
import re
from dataclasses import dataclass, field

SECTIONS = ("vm", "workload", "run", "output")
RESERVED = {"output.dir", "output.run-id"}  # the sweep decides where each cell writes
_KEY = re.compile(r"^([a-z]+)\.([a-z][a-z0-9-]*)$")
_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_SET = re.compile(r"^[a-z][a-z0-9-]*$")  # a set axis's key


class SweepError(Exception):
    """A sweep spec that cannot run; the message names the line, key or value."""


@dataclass
class Axis:
    key: str  # runner option without the leading dashes, e.g. "vm.lock"; or a set axis's name
    values: list
    sets: dict = field(default_factory=dict)  # a set axis: value -> [(option, text)] it stands for

    @property
    def short(self) -> str:
        """The key's last part (lock, cpus, phases): used in cell ids and figure labels."""
        return self.key.split(".", 1)[-1]


@dataclass
class Cell:
    id: str
    values: dict  # axis key -> value, in axis order
    sets: dict = field(default_factory=dict)  # set axis key -> [(option, text)] of this cell's value

    def overrides(self) -> list:
        """The runner's command-line options for this cell's axis values."""
        args = []
        for key, value in self.values.items():
            if key in self.sets:
                for option, text in self.sets[key]:
                    args += [f"--{option}", text]
                continue
            args += [f"--{key}", value.replace("+", ",") if key == "run.phases" else value]
        return args


@dataclass
class SweepSpec:
    name: str
    base_text: str  # the spec without its [sweep] section: what every cell runs
    axes: list
    cells: list = field(default_factory=list)


def split_sweep_section(text: str, sets: dict | None = None) -> tuple[str, list]:
    """The spec text without [sweep] and [sweep.KEY.VALUE], and [sweep]'s (line number, key,
    value) entries; the set sections' (line number, option, text) go into sets[(KEY, VALUE)]."""
    base, entries, section = [], [], None
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            name = stripped[1:-1].strip()
            section = name if name == "sweep" or name.startswith("sweep.") else None
            if section and section != "sweep":
                parts = section.split(".", 2)
                if len(parts) != 3 or not _SET.match(parts[1]) or not parts[2]:
                    raise SweepError(f"line {n}: section [{name}] is not [sweep.KEY.VALUE] (a set axis's value)")
                if sets is not None:
                    sets.setdefault((parts[1], parts[2]), [])
            if section:
                continue
        if not section:
            base.append(line)
            continue
        if not stripped or stripped.startswith(("#", ";")):
            continue
        if "=" not in stripped:
            raise SweepError(f"[{section}] line {n}: '{stripped}' is not 'key = value, value, ...'")
        key, value = (part.strip() for part in stripped.split("=", 1))
        if section == "sweep":
            entries.append((n, key, value))
        elif sets is not None:
            _, k, v = section.split(".", 2)
            sets[(k, v)].append((n, key, value))
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
        cells.append(Cell(cid, values, {a.key: a.sets[v] for a, v in zip(axes, combo) if a.sets}))
    ids = [c.id for c in cells]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise SweepError(f"axis values give the same cell id twice ({dup[0]}): make the values distinct")
    return cells


def parse(text: str, default_name: str) -> SweepSpec:
    """Parse a sweep spec's text; raise SweepError naming what is wrong."""
    sets = {}
    base, entries = split_sweep_section(text, sets)
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
        if _SET.match(key):  # a set axis: its values are [sweep.KEY.VALUE] sections
            if key in seen:
                raise SweepError(f"[sweep] line {n}: axis '{key}' is given twice")
            seen.add(key)
            values = [v.strip() for v in value.split(",")]
            if not value.strip() or any(not v for v in values) or len(set(values)) != len(values):
                raise SweepError(f"[sweep] line {n}: set axis '{key}' needs distinct, non-empty values in '{value}'")
            chosen = {}
            for v in values:
                if (key, v) not in sets:
                    raise SweepError(f"[sweep] line {n}: '{key}' is not an axis: write SECTION.KEY with SECTION one of "
                                     f"{', '.join(SECTIONS)} (e.g. vm.lock), or make it a set axis: value '{v}' "
                                     f"has no section [sweep.{key}.{v}]")
                opts = []
                for ln, option, text_ in sets[(key, v)]:
                    om = _KEY.match(option)
                    if not om or om.group(1) not in SECTIONS or option in RESERVED:
                        raise SweepError(f"[sweep.{key}.{v}] line {ln}: '{option}' is not a runner option SECTION.KEY "
                                         f"with SECTION one of {', '.join(SECTIONS)}")
                    opts.append((option, text_))
                if not opts:
                    raise SweepError(f"[sweep.{key}.{v}] sets no option")
                chosen[v] = opts
            unused = sorted(f"[sweep.{k}.{v}]" for k, v in sets if k == key and v not in values)
            if unused:
                raise SweepError(f"[sweep] line {n}: set axis '{key}' does not list {', '.join(unused)}")
            axes.append(Axis(key, values, chosen))
            continue
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
    orphans = sorted(f"[sweep.{k}.{v}]" for k, v in sets if k not in seen)
    if orphans:
        raise SweepError(f"{orphans[0]}: no set axis '{orphans[0][7:].split('.')[0]}' in [sweep] lists it")
    if not _ID.match(name):
        raise SweepError(f"the sweep's name '{name}' must be letters, digits, '.', '-' or '_': set [sweep] id")
    return SweepSpec(name, base, axes, expand(axes))
