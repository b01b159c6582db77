"""The self-test harness's hang detection (vm-images/selftest.py:watch): a hang is no output
for --timeout seconds, not a long total; a run that keeps printing is stopped at --max-time."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import selftest  # noqa: E402


def printer(script):
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


# One line every 0.2 s for `n` lines, then exit 3.
STEADY = "import time\nfor i in range({n}):\n    print(i, flush=True); time.sleep(0.2)\nraise SystemExit(3)"


def test_slow_but_steady_output_is_not_a_hang():
    # 2 s in all, far more than the 1 s hang timeout, but never 1 s without a line.
    status, lines, why = selftest.watch(printer(STEADY.format(n=10)), timeout=1.0, max_time=30, on_line=lambda l: None)
    assert (status, why) == (3, "")
    assert lines == [str(i) for i in range(10)]


def test_silence_is_a_hang_and_the_process_is_killed():
    p = printer("import time\nprint('booted', flush=True)\ntime.sleep(60)")
    status, lines, why = selftest.watch(p, timeout=1.0, max_time=30, on_line=lambda l: None)
    assert status is None and why.startswith("hang: no console line for")
    assert lines == ["booted"]
    assert p.poll() is not None, "killed"


def test_endless_progress_is_stopped_at_max_time():
    p = printer(STEADY.format(n=1000))
    status, lines, why = selftest.watch(p, timeout=1.0, max_time=1.5, on_line=lambda l: None)
    assert status is None and why.startswith("too slow: still running after")
    assert 3 <= len(lines) < 100 and p.poll() is not None


def test_config_mismatch_compares_the_reported_configuration_with_the_command_line():
    line = ("lockstat: config: 2 CPUs, TSC 2600000000 Hz, lock mcs, clock cpuid, instrument full, "
            "hypervisor 'TCGTCGTCGTCG', KVM features 0x0, build abc")
    assert selftest.config_mismatch([line], "selftest=lockstat lock=mcs clock=cpuid") is None
    assert selftest.config_mismatch([line], "lock=mcs clock=lfence clock=cpuid") is None  # last wins
    assert selftest.config_mismatch([line], "lock=mcs") == "clock cpuid, booted with clock=lfence"
    assert selftest.config_mismatch([line], "clock=cpuid") == "lock mcs, booted with lock=tas"
    assert selftest.config_mismatch(["no config line"], "clock=cpuid") is None
