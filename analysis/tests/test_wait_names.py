"""A long wait's names (issue 53, "one vocabulary for the results"): one name for each of its
classes, in the results, the per-wait rows (lhp.Attributed.row, long_waits_share's dicts) and the
API's waits alike: lock_class (the lock's), lhp_class (the guest's, from steal time),
timeline_class (the host timeline's alone) and cause (the class the report counts), each side's
source in holder_source and waiter_source.

Its lock class was `class` in the results before issue 53, and such results are read alike
(contract.OLD_KEYS): tests/data/run-basic (the golden run, kept as recorded) and data/old-results
say `class` (the labs' recorded runs, labs/tests/data, list no long waits). The guard: a row's
keys and the API's columns are exactly the vocabulary's, and no module of the package or the
labs' checkers reads a row by an old name (lhp, source, guest_class, Attributed.lhp())."""
import glob
import json
import os
import re

import pytest

from spinlab_report import api, attribution, reader
from spinlab_report import contract as c
from spinlab_report.waits import LongWaits, check_long_wait

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OLD_CLASS = c.OLD_KEYS[c.K.lock_class]  # "class"
# Results written before issue 53, kept as they were written: each snapshot's long waits say class.
KEPT = [os.path.join(HERE, "data", "run-basic")] + sorted(
    os.path.dirname(p) for p in glob.glob(os.path.join(HERE, "data", "old-results", "*", "meta.json")))


def wait(**kw):
    return {"cpu": 0, "start_tsc": 1000, "wait_cycles": 1 << 21, "holder_cpu": 1, "lhp_class": "unknown", **kw}


def test_the_lock_class_is_read_under_its_name_and_its_old_one():
    assert c.K.lock_class == "lock_class" and OLD_CLASS == "class"
    new, old = wait(lock_class="user0"), wait(**{OLD_CLASS: "user0"})
    for items in ([new, new], [old, old], [new, old]):  # a list of either, or both
        rows = list(LongWaits.from_json(items, "long_waits"))
        assert [r["lock_class"] for r in rows] == ["user0", "user0"]
        assert all(OLD_CLASS not in r for r in rows)
        assert rows == list(LongWaits.of(items))  # the trusted path (tests' and tools' dicts) alike
    assert check_long_wait(old, "w")["lock_class"] == "user0"
    # the new name wins where an entry has both
    assert check_long_wait(wait(lock_class="sched", **{OLD_CLASS: "user0"}), "w")["lock_class"] == "sched"
    assert LongWaits.from_json([wait(lock_class="sched", **{OLD_CLASS: "user0"})], "w")[0]["lock_class"] == "sched"


def test_a_wait_without_a_lock_class_names_the_field_by_its_name():
    with pytest.raises(c.ContractError, match=r"long_waits\[1\]: field 'lock_class' is missing"):
        LongWaits.from_json([wait(lock_class="user0"), wait()], "long_waits")
    with pytest.raises(c.ContractError, match=r"long_waits\[0\]: field 'class' must be str"):
        LongWaits.from_json([wait(**{OLD_CLASS: 3})], "long_waits")


@pytest.mark.parametrize("run_dir", KEPT, ids=lambda p: os.path.relpath(p, ROOT))
def test_kept_results_say_class_and_are_read_as_lock_class(run_dir):
    """Every kept run from before issue 53 lists its waits under the old name; the reader gives
    each wait's lock class as it was written."""
    snaps = sorted(glob.glob(os.path.join(run_dir, c.SNAPSHOT_DIR, "*.json")))
    listed = 0
    for path in snaps:
        with open(path) as f:
            raw = json.load(f).get(c.K.long_waits) or []
        assert all(OLD_CLASS in w and c.K.lock_class not in w for w in raw), path
        rows = list(reader.read_snapshot(path).long_waits)
        assert [r["lock_class"] for r in rows] == [w[OLD_CLASS] for w in raw], path
        listed += len(raw)
    assert snaps and listed, run_dir


# -- the one vocabulary, guarded: a row's keys and the API's columns are exactly these, and no
# module reads a row by an old name

# A wait's row (lhp.Attributed.row: long_waits_share's dicts): the results' entry (waits.py), then
# the measurement and the attribution. timeline_*: only where the timeline was measured.
ROW_KEYS = {"cpu", "lock_class", "start_tsc", "wait_cycles", "holder_cpu", "holder_end_cpu", "lhp_class", "holds",
            "holder_steal_ns", "waiter_steal_ns", "rep", "host_start", "bound_cycles", "holder_off_cycles",
            "waiter_off_cycles", "holders", "holder_side", "holder_source", "holder_disagrees", "waiter_side",
            "waiter_source", "waiter_disagrees", "cause", "in_repetition"}
TIMELINE_KEYS = {"timeline_holder", "timeline_holder_any", "timeline_waiter", "timeline_waiter_any", "timeline_class"}
# The names each of them had before issue 53 (rows: class, lhp, source; API: guest_class, class).
OLD_NAMES = {"class", "lhp", "source", "guest_class"}
PACKAGE = os.path.join(ROOT, "analysis", "spinlab_report")
# What reads the rows besides the package: the labs' checkers and their library.
READERS = sorted(glob.glob(os.path.join(PACKAGE, "*.py")) + glob.glob(os.path.join(ROOT, "labs", "*", "check.py"))
                 + glob.glob(os.path.join(ROOT, "labs", "spinlab_labs", "*.py")))
# A read of "lhp" or "source" by subscript or .get() is a row's old name unless its receiver is
# one of these (each reads another file's key of that name).
NOT_A_ROW = {"lhp": {"s": "a phase of summary.json: its lhp block (the counts)",
                     "p": "a phase of summary.json: its lhp block (the counts)"},
             "source": {"info": "summary.json's clock: which clock placed guest times",
                        "ref": "clock.json's reference clock"}}
_OLD_READ = re.compile(r"""(\w*)(?:\[\s*|\.get\(\s*)["'](lhp|source)["']""")
_FORBIDDEN = re.compile(r"""guest_class|\.lhp\(\)""")


def old_names_read(text: str):
    """(line, what) of each row read by an old name: "lhp" or "source" taken by subscript or .get()
    from anything but NOT_A_ROW's receivers, and guest_class or Attributed.lhp() anywhere."""
    for n, line in enumerate(text.splitlines(), 1):
        for m in _OLD_READ.finditer(line):
            if m.group(1) not in NOT_A_ROW[m.group(2)]:
                yield n, m.group(0)
        yield from ((n, m.group(0)) for m in _FORBIDDEN.finditer(line))


def test_a_rows_keys_are_exactly_the_vocabularys():
    run = reader.load_run(os.path.join(HERE, "data", "run-basic"))
    measured = list(attribution.long_waits_share(run.snaps("host-load"), run.timeline, run.clock, 1 << 20)["waits"])
    unmeasured = list(attribution.long_waits_share(run.snaps("host-load"), None, None, 1 << 20)["waits"])
    assert measured and unmeasured
    assert all(set(r) == ROW_KEYS | TIMELINE_KEYS for r in measured), set(measured[0]) ^ (ROW_KEYS | TIMELINE_KEYS)
    assert all(set(r) == ROW_KEYS for r in unmeasured), set(unmeasured[0]) ^ ROW_KEYS
    assert not OLD_NAMES & (ROW_KEYS | TIMELINE_KEYS)


def test_the_apis_wait_columns_are_exactly_the_vocabularys():
    classes = ("lock_class", "lhp_class", "timeline_class", "cause")
    assert set(classes) <= set(api.WAIT_COLUMNS) and not OLD_NAMES & set(api.WAIT_COLUMNS)
    assert set(api.WAIT_COLUMNS) == {"phase", "rep", "cpu", "start_tsc", "wait_cycles", "holder_cpu", "holder_end_cpu",
                                     "holders", "holder_off_min_share", "holder_off_max_share", "holder_side",
                                     "holder_source", "waiter_off_min_share", "waiter_off_max_share", "waiter_side",
                                     "waiter_source", "in_repetition", "host_start_tsc", "bound_cycles", *classes}
    assert len(api.WAIT_COLUMNS) == len(set(api.WAIT_COLUMNS))


def test_no_module_reads_a_row_by_an_old_name():
    found = []
    for path in READERS:
        with open(path, encoding="utf-8") as f:
            found += [f"{os.path.relpath(path, ROOT)}:{n}: {what}" for n, what in old_names_read(f.read())]
    assert not found, ("a wait read by its old name (rows and the API: cause, not lhp; holder_source, not source; "
                       "lhp_class, not guest_class; Attributed.cause(), not .lhp()). Another file's key of that "
                       "name read from a receiver not in NOT_A_ROW: add it there, saying what it is.\n  "
                       + "\n  ".join(found))


def test_the_scan_sees_an_old_name_read():
    text = ('w["lhp"]\nrow.get("source")\nx["phases"]["lhp"]\ns["lhp"]\np.get("lhp", {})\ninfo["source"]\n'
            "f\"{ref['source']}\"\nr['guest_class']\natt.lhp()[keep]\nlhp.class_of(a, b)\n# the lhp block\n")
    assert list(old_names_read(text)) == [(1, 'w["lhp"'), (2, 'row.get("source"'), (3, '["lhp"'),
                                          (8, "guest_class"), (9, ".lhp()")]
