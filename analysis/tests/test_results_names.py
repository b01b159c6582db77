"""The results' names are spelled once, in hostlib/results_contract.h (issue 53).

The C++ writers of the results directory write results::key::<name>, and the Python loader
(contract.py, reader.py) reads contract.K.<name>: neither spells a key, a timeline column or a
state as a string of its own. This test reads the table as the build wrote it
(results_contract.json) and fails, naming the file and line, where one of them does. The other
analysis modules read what the loader made of the files (Snapshot, ClassStat, the timeline's
DataFrame, reader.Meta). Of meta.json they read the attributes of reader.Meta alone: a
meta.json key spelled as a string where a module reads the meta (run.meta["lock"],
meta.get("vcpus"), a host = run.meta.host then host["tsc_hz"]) fails here too. The other
files' keys (a snapshot's, status.json's, summary.json's) they still spell.
"""
import ast
import io
import os
import re
import tokenize

from spinlab_report import contract as c

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Every writer of a results file, and what of the table each may not spell.
KEYS, STATES = "keys", "states"
CPP_WRITERS = {
    "experiments/runner/results.cc": (KEYS,),        # meta, status, clock, snapshots
    "collector/report_format.cc": (KEYS,),           # a class's counters (perf_json), pv
    "collector/clock_fit_json.cc": (KEYS,),          # clock.json's fit
    "collector/record_file.cc": (KEYS,),             # shares perf_json and the fit
    "hypervisor-hooks/timeline/run_intervals.cc": (KEYS, STATES, "csv"),  # timeline.csv
}
PY_READERS = {"analysis/spinlab_report/contract.py": (KEYS, STATES),
              "analysis/spinlab_report/reader.py": (KEYS, STATES)}

# meta.json's keys: those of the meta object and of the objects inside it (meta_host, ...), and
# the old names of its keys (OLD_KEYS).
META_OBJECTS = tuple(name for name in c.OBJECTS if name == "meta" or name.startswith("meta_"))
META_KEYS = set().union(*(c.OBJECTS[name] for name in META_OBJECTS))
META_KEYS |= {old for new, old in c.OLD_KEYS.items() if new in META_KEYS}
PACKAGE = "analysis/spinlab_report"
# Modules whose `meta` is another file's: spinlab-collect's column export has a meta.json of its own.
NOT_THE_RESULTS_META = {f"{PACKAGE}/trace_columns.py"}

_CPP_TOKEN = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
# A JSON writer's key: the first argument of JsonWriter::field or ::key (values such as a record
# line's "type": "end" or a timeline row's reason "start" are not names of the table).
_CPP_KEY_CALL = re.compile(r'\b(?:field|key)\(\s*$')


def names(kinds) -> set:
    out = set()
    if KEYS in kinds:
        out |= set(c.K)
    if STATES in kinds:
        out |= set(c.TIMELINE_STATE.names) | set(c.RUN_STATE.names)
    return out


def cpp_strings(text: str, csv: bool = True):
    """(line, value) of each string literal outside comments that a JSON writer takes as a key,
    and (csv: in the writer of a results CSV) each column of one that is a CSV header line."""
    for m in _CPP_TOKEN.finditer(text):
        tok = m.group(0)
        if not tok.startswith('"'):
            continue
        before = text[max(0, m.start() - 40):m.start()]
        line = text.count("\n", 0, m.start()) + 1
        if _CPP_KEY_CALL.search(before):
            yield line, tok[1:-1]
        elif csv and "," in tok:  # a CSV header spelled out: each of its columns
            yield from ((line, col) for col in tok[1:-1].replace("\\n", "").split(","))


def py_strings(text: str):
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.STRING:
            try:
                value = ast.literal_eval(tok.string)
            except (ValueError, SyntaxError):  # an f-string: its text parts are prose
                continue
            if isinstance(value, str):
                yield tok.start[0], value


def spelled(files: dict, strings) -> list:
    found = []
    for rel, kinds in files.items():
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            text = f.read()
        table = names(kinds)
        found_here = strings(text, "csv" in kinds) if strings is cpp_strings else strings(text)
        found += [f"{rel}:{line}: \"{value}\"" for line, value in found_here if value in table]
    return found


def _from_meta(node, names: set) -> bool:
    """Whether an expression is the meta or a part of it: `meta`, `x.meta`, a name bound to such
    a part (names), and what indexing, .get(), `or`, a conditional or iterating takes from one."""
    if isinstance(node, ast.Name):
        return node.id == "meta" or node.id in names
    if isinstance(node, ast.Attribute):
        return node.attr == "meta" or _from_meta(node.value, names)
    if isinstance(node, ast.Subscript):
        return _from_meta(node.value, names)
    if isinstance(node, ast.Call):
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr in ("get", "items", "values", "keys"):
            return _from_meta(f.value, names)
        return isinstance(f, ast.Name) and f.id in ("enumerate", "sorted", "list", "reversed", "iter", "dict") and \
            any(_from_meta(a, names) for a in node.args)
    if isinstance(node, ast.BoolOp):
        return any(_from_meta(v, names) for v in node.values)
    if isinstance(node, ast.IfExp):
        return _from_meta(node.body, names) or _from_meta(node.orelse, names)
    return False


def _bound(target) -> set:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _walk_scope(scope):
    """The nodes of a module's top level or of one function, without the functions inside it."""
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, _SCOPES):
            todo += ast.iter_child_nodes(node)


def _meta_names(scope) -> set:
    """The names a function (or a module's top level) binds to the meta or a part of it:
    assigned or looped over from one, to a fixed point."""
    names = set()
    while True:
        before = len(names)
        for node in _walk_scope(scope):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None \
                    and _from_meta(node.value, names):
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                    names |= _bound(t)
            elif isinstance(node, (ast.For, ast.comprehension)) and _from_meta(node.iter, names):
                names |= _bound(node.target)
        if len(names) == before:
            return names


def _key(node) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def meta_keys_read(text: str):
    """(line, key) of each meta.json key spelled as a string where the meta is read: indexed
    (meta["lock"]), taken (.get, .pop, .setdefault, getattr, hasattr) or looked for ("lock" in meta)."""
    tree = ast.parse(text)
    for scope in [tree] + [n for n in ast.walk(tree) if isinstance(n, _SCOPES)]:
        names = _meta_names(scope)
        for node in _walk_scope(scope):
            keys = []
            if isinstance(node, ast.Subscript) and _from_meta(node.value, names):
                keys = [_key(node.slice)]
            elif isinstance(node, ast.Call) and node.args:
                f = node.func
                if isinstance(f, ast.Attribute) and f.attr in ("get", "pop", "setdefault") and _from_meta(f.value, names):
                    keys = [_key(node.args[0])]
                elif isinstance(f, ast.Name) and f.id in ("getattr", "hasattr") and len(node.args) > 1 and \
                        _from_meta(node.args[0], names):
                    keys = [_key(node.args[1])]
            elif isinstance(node, ast.Compare) and any(isinstance(o, (ast.In, ast.NotIn)) for o in node.ops) and \
                    any(_from_meta(x, names) for x in node.comparators):
                keys = [_key(node.left)]
            yield from ((node.lineno, k) for k in keys if k in META_KEYS)


def meta_readers() -> list:
    """The package's modules but the loader's (and those whose meta is another file's)."""
    return sorted(f"{PACKAGE}/{name}" for name in os.listdir(os.path.join(ROOT, PACKAGE))
                  if name.endswith(".py") and f"{PACKAGE}/{name}" not in set(PY_READERS) | NOT_THE_RESULTS_META)


def test_the_writers_spell_no_results_name():
    found = spelled(CPP_WRITERS, cpp_strings)
    assert not found, ("results names spelled outside hostlib/results_contract.h (write results::key::NAME, "
                       "or the enum's *_name()):\n  " + "\n  ".join(found))


def test_the_loader_spells_no_results_name():
    found = spelled(PY_READERS, py_strings)
    assert not found, ("results names spelled outside the table (read contract.K.NAME, contract.TIMELINE_STATE, "
                       "contract.RUN_STATE):\n  " + "\n  ".join(found))


def test_the_other_modules_read_meta_json_through_reader_meta():
    found = []
    for rel in meta_readers():
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            found += [f"{rel}:{line}: \"{key}\"" for line, key in sorted(meta_keys_read(f.read()))]
    assert not found, ("meta.json keys spelled outside the loader (read the run's reader.Meta: run.meta.vcpus, "
                       "run.meta.host.tsc_hz, or add the field to reader.Meta):\n  " + "\n  ".join(found))


def test_the_meta_scan_sees_a_key_read_from_the_meta():
    """The meta scanner itself: keys read from the meta, directly or through a name bound to a part
    of it, are found; the same words read from anything else, or said in prose, are not."""
    py = ('def f(run, summary, meta):\n'
          '    a = run.meta.get("vcpus")\n'                      # 2
          '    b = meta["lock"]\n'                               # 3
          '    host = run.meta.get("host") or {}\n'              # 4
          '    c = host.get("tsc_hz")\n'                         # 5
          '    for v in (run.meta.get("neighbours") or {}).get("vms") or []:\n'  # 6
          '        print(v["role"])\n'                           # 7
          '    d = "preempt_rt_priority" in meta\n'              # 8
          '    e = getattr(run.meta, "guest")\n'                 # 9
          '    x = summary["phases"], run.snaps("lock"), "vcpus", f"{run.meta.vcpus}"\n'
          '    y = {"lock": 1}["lock"]\n')
    assert sorted(meta_keys_read(py)) == [(2, "vcpus"), (3, "lock"), (4, "host"), (5, "tsc_hz"), (6, "neighbours"),
                                          (6, "vms"), (7, "role"), (8, "preempt_rt_priority"), (9, "guest")]
    assert {"vcpus", "tsc_hz", "role", "preempt_rt_priority"} <= META_KEYS and "events_lost" not in META_KEYS


def test_the_scan_sees_a_spelled_key_and_state():
    """The scanners themselves: a literal key in C++ and Python is found, one in a comment is not."""
    cpp = ('// "phase" in a comment\nj.field("phase", p);\nw.key( "rep");\nj.field(key::end, "end");\n'
           'return "vcpu,tid,frozen\\n";\n')
    assert [v for _, v in cpp_strings(cpp)] == ["phase", "rep", "vcpu", "tid", "frozen"]
    py = '# "phase"\nx = d["rep"]\ny = f"{d[\'cpu\']}"\n'
    assert [v for _, v in py_strings(py)] == ["rep"]
    assert "phase" in names((KEYS,)) and "frozen" in names((STATES,)) and "frozen" not in names((KEYS,))


def test_old_names_are_not_the_tables():
    """OLD_KEYS holds only names the table no longer has, each under the key that replaced it."""
    for new, old in c.OLD_KEYS.items():
        assert new in set(c.K) and old not in set(c.K), (new, old)
