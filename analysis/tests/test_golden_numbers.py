"""Golden numbers: the report on the test data (run-basic, with a higher threshold, and with
hand-over chains) gives exactly the numbers recorded in data/expected/golden-numbers.json, which
were written by the per-wait Python analysis before it was vectorized (golden_numbers.py says
what is compared: summary.json with the verdict, table.txt/.csv, report.md, every attributed
long wait, and the data of the long-wait figures)."""
import json

import pytest

import golden_numbers  # noqa: E402 (tests/ is on the path: conftest)


@pytest.fixture(scope="module")
def expected():
    with open(golden_numbers.EXPECTED) as f:
        return json.load(f)


def _diff(path, a, b, out):
    """The first differing paths of two JSON values (for a readable failure)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            _diff(f"{path}.{k}", a.get(k, "<missing>"), b.get(k, "<missing>"), out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            _diff(f"{path}[{i}]", x, y, out)
    elif a != b:
        out.append(f"{path}: expected {a!r:.200}, got {b!r:.200}")


@pytest.mark.parametrize("case", sorted(golden_numbers.CASES))
def test_numbers_match_the_recorded_ones(case, expected):
    got = json.loads(json.dumps(golden_numbers.numbers(case), sort_keys=True))
    assert set(got) >= {"summary", "table", "csv", "waits", "holder_off_points", "long_wait_window"}
    assert ("md" in got) == (case == golden_numbers.FULL_REPORT)
    diffs = []
    _diff(case, {k: v for k, v in expected[case].items() if k in got}, got, diffs)
    assert not diffs, "\n".join(diffs[:20])
