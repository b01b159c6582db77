"""Lab 2's checker finds the freeze phase, its records and its period by their names (issue 53):
freeze-<N>ms, freezes/<phase>-r<rep>.csv and run.freeze-period-ms, which `spinlab lab start 2`
writes; and in results from before the rename their old names preempt-<N>ms, preempt/ and
run.preempt-period-ms. No guest: made-up results (the real run is test_real_runs.py's)."""
import types

import pytest

from spinlab_labs import registry
from spinlab_labs.observe import LabInputError

lab2 = registry.lab(2).module

# hypervisor-hooks/freezes/freeze_record.cc's columns that the windows are read from, and two
# freezes of vCPU 0 (one measured, one not) and one of vCPU 1
RECORD = ("seq,tid,vcpu,stopped_tsc,resumed_tsc,effective\n"
          "0,77,0,1000,2000,ok\n1,77,0,5000,0,never-stopped\n2,78,1,3000,4000,ok\n")


def fake_run(tmp_path, phases, folder=None, record_phase=None, spec_text=""):
    if folder:
        (tmp_path / folder).mkdir()
        (tmp_path / folder / f"{record_phase}-r1.csv").write_text(RECORD)
    return types.SimpleNamespace(path=str(tmp_path), phases=phases, snaps=lambda p: ["a snapshot"],
                                 spec_text=spec_text)


@pytest.mark.parametrize("phase", ["freeze-30ms", "preempt-30ms"])  # the name, its old name
def test_the_freeze_phase_and_its_records(tmp_path, phase):
    folder = "freezes" if phase.startswith("freeze") else "preempt"
    run = fake_run(tmp_path, ["idle-host", "host-load", phase], folder, phase)
    assert lab2._freeze_phase(run) == (phase, 30)
    assert lab2._freezes(run, phase, 1) == {0: [(1000.0, 2000.0)], 1: [(3000.0, 4000.0)]}
    assert lab2._freezes(run, phase, 2) == {}  # no record of that repetition


def test_no_freeze_phase_is_refused_by_its_name(tmp_path):
    with pytest.raises(LabInputError, match=r"no freeze-<N>ms phase with snapshots \(phases: idle-host, host-load\)"):
        lab2._freeze_phase(fake_run(tmp_path, ["idle-host", "host-load"]))


def test_the_period_from_the_spec_as_run(tmp_path):
    def period(spec_text):
        return lab2._period_ms(fake_run(tmp_path, [], spec_text=spec_text))
    assert period("[run]\nfreeze-period-ms = 50\n") == 50.0
    assert period("[run]\npreempt-period-ms = 80\n") == 80.0  # its old name
    assert period("[run]\nfreeze-period-ms = 50\npreempt-period-ms = 80\n") == 50.0
    assert period("[run]\nphases = idle-host\n") == 100.0  # the runner's default
