"""The results' names are spelled once, in hostlib/results_contract.h (issue 53).

The C++ writers of the results directory write results::key::<name>, and the Python loader
(contract.py, reader.py) reads contract.K.<name>: neither spells a key, a timeline column or a
state as a string of its own. This test reads the table as the build wrote it
(results_contract.json) and fails, naming the file and line, where one of them does. The other
analysis modules read what the loader made of the files (Snapshot, ClassStat, the timeline's
DataFrame, the meta dict); they are not held to this yet.
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


def test_the_writers_spell_no_results_name():
    found = spelled(CPP_WRITERS, cpp_strings)
    assert not found, ("results names spelled outside hostlib/results_contract.h (write results::key::NAME, "
                       "or the enum's *_name()):\n  " + "\n  ".join(found))


def test_the_loader_spells_no_results_name():
    found = spelled(PY_READERS, py_strings)
    assert not found, ("results names spelled outside the table (read contract.K.NAME, contract.TIMELINE_STATE, "
                       "contract.RUN_STATE):\n  " + "\n  ".join(found))


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
