"""Golden numbers: the report on the test data (run-basic, with a higher threshold, and with
hand-over chains) gives the numbers recorded in data/expected/golden-numbers.json, which were
written by the per-wait Python analysis before it was vectorized (golden_numbers.py says what is
compared and how: counts and text exactly, floats within a relative 1e-9).

numpy's results depend on the SIMD code path it picks for this CPU, so the numbers are computed in
a subprocess twice: with every feature numpy may dispatch to ("all-features"), and with every
dispatchable feature this CPU has switched off through NPY_DISABLE_CPU_FEATURES
("dispatch-off": AVX-512 where the CPU has it, AVX2, FMA3, ... down to numpy's baseline)."""
import json
import os
import subprocess
import sys

import pytest

import golden_numbers  # noqa: E402 (tests/ is on the path: conftest)

MODES = ("all-features", "dispatch-off")


@pytest.fixture(scope="module")
def expected():
    with open(golden_numbers.EXPECTED) as f:
        return json.load(f)


def _here_features() -> dict:
    out = subprocess.run([sys.executable, "-c", "import json, golden_numbers; print(json.dumps(golden_numbers.cpu_features()))"],
                         cwd=os.path.dirname(golden_numbers.__file__), env=_env(None),
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def _env(disable):
    env = {k: v for k, v in os.environ.items() if k not in ("NPY_DISABLE_CPU_FEATURES", "NPY_ENABLE_CPU_FEATURES")}
    if disable:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(disable)
    return env


@pytest.fixture(scope="module")
def computed():
    """mode -> (the features switched off, numpy's features in that subprocess, the numbers)."""
    here = _here_features()
    off = [f for f in here["dispatch"] if f in here["found"]]
    results = {}
    for mode in MODES:
        disable = off if mode == "dispatch-off" else []
        if mode == "dispatch-off" and not off:
            results[mode] = (disable, None, None)  # nothing to switch off: judged once only
            continue
        p = subprocess.run([sys.executable, golden_numbers.__file__, "--print", *sorted(golden_numbers.CASES)],
                           env=_env(disable), capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, f"golden_numbers.py --print ({mode}) failed:\n{p.stderr[-3000:]}"
        d = json.loads(p.stdout)
        results[mode] = (disable, d["cpu"]["found"], d["numbers"])
    return results


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(golden_numbers.CASES))
def test_numbers_match_the_recorded_ones(case, mode, expected, computed):
    disable, found, numbers = computed[mode]
    if numbers is None:
        pytest.skip("not judged: numpy may dispatch to no feature this CPU has beyond its baseline, "
                    "so there is no second code path to run")
    # the features were really switched off (numpy ignores a name it does not know, with a warning)
    assert not set(disable) & set(found), f"NPY_DISABLE_CPU_FEATURES left on: {sorted(set(disable) & set(found))}"
    got = numbers[case]
    assert set(got) >= {"summary", "table", "csv", "waits", "holder_off_points", "long_wait_window"}
    assert ("md" in got) == (case == golden_numbers.FULL_REPORT)
    diffs = golden_numbers.compare(case, {k: v for k, v in expected[case].items() if k in got}, got, [])
    off = f" (switched off: {' '.join(disable)})" if disable else ""
    assert not diffs, f"{mode}{off}:\n" + "\n".join(diffs[:20])
