"""A long wait's names (issue 53, "one vocabulary for the results"): its lock class is
`lock_class` in the results (the runner's long_waits) and in every per-wait row and the API.
Results written before issue 53 call it `class`, and are read alike (contract.OLD_KEYS):
tests/data/run-basic (the golden run, kept as recorded) and data/old-results say `class` (the
labs' recorded runs, labs/tests/data, list no long waits)."""
import glob
import json
import os

import pytest

from spinlab_report import contract as c
from spinlab_report import reader
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
