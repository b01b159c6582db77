"""The sweep spec: axes, cells, ids, and the refusals that name what is wrong."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from spinlab_sweep import spec  # noqa: E402

BASE = "[vm]\ncpus = 2\n\n[run]\nphases = idle-host\n"


def test_axes_cells_and_base_text():
    s = spec.parse(BASE + "[sweep]\nvm.lock = tas, ticket\nvm.cpus = 2, 4\n", "x")
    assert [a.key for a in s.axes] == ["vm.lock", "vm.cpus"]
    assert [c.id for c in s.cells] == ["lock-tas_cpus-2", "lock-tas_cpus-4", "lock-ticket_cpus-2",
                                       "lock-ticket_cpus-4"]
    assert s.cells[1].overrides() == ["--vm.lock", "tas", "--vm.cpus", "4"]
    assert "[sweep]" not in s.base_text and "vm.lock" not in s.base_text
    assert "cpus = 2" in s.base_text and "phases = idle-host" in s.base_text
    assert s.name == "x"


def test_sweep_section_in_the_middle_keeps_later_sections():
    s = spec.parse("[vm]\ncpus = 2\n[sweep]\nvm.lock = tas\n[run]\nduration = 3\n", "x")
    assert "duration = 3" in s.base_text and "vm.lock" not in s.base_text


def test_phase_lists_join_with_plus_and_id_is_taken():
    s = spec.parse(BASE + "[sweep]\nid = mine\nrun.phases = idle-host+host-load, idle-host+freeze-30ms\n", "x")
    assert s.name == "mine"
    assert s.cells[0].overrides() == ["--run.phases", "idle-host,host-load"]
    assert s.cells[1].id == "phases-idle-host_freeze-30ms"
    assert s.cells[1].overrides() == ["--run.phases", "idle-host,freeze-30ms"]


def test_old_freeze_names_reach_the_runner_as_written():
    """A sweep spec from before issue 53 (run.preempt-vcpus, preempt-Nms: the old names of
    run.freeze-vcpus and freeze-Nms) is passed on as written; the runner reads the old names
    (test_sweep_local.py checks it accepts both)."""
    s = spec.parse(BASE + "[sweep]\nrun.preempt-vcpus = 0, 1\nrun.phases = idle-host+preempt-30ms\n", "x")
    assert [c.id for c in s.cells] == ["preempt-vcpus-0_phases-idle-host_preempt-30ms",
                                       "preempt-vcpus-1_phases-idle-host_preempt-30ms"]
    assert s.cells[1].overrides() == ["--run.preempt-vcpus", "1", "--run.phases", "idle-host,preempt-30ms"]


def test_percent_in_values_gives_a_valid_id():
    s = spec.parse(BASE + "[sweep]\nrun.phases = throttle-50%\n", "x")
    assert s.cells[0].id == "phases-throttle-50pct"


@pytest.mark.parametrize("sweep, words", [
    ("", "no [sweep] section"),
    ("[sweep]\n", "no [sweep] section"),
    ("[sweep]\nlock = tas\n", "'lock' is not an axis"),
    ("[sweep]\nhost.cpus = 2\n", "'host.cpus' is not an axis"),
    ("[sweep]\noutput.dir = a, b\n", "'output.dir' cannot be an axis"),
    ("[sweep]\nvm.lock = tas\nvm.lock = mcs\n", "given twice"),
    ("[sweep]\nvm.lock = tas, , mcs\n", "empty value"),
    ("[sweep]\nvm.lock = tas, tas\n", "repeats a value"),
    ("[sweep]\nvm.lock tas\n", "line 7"),
    ("[sweep]\nid = a/b\nvm.lock = tas\n", "id 'a/b'"),
])
def test_refusals_name_the_problem(sweep, words):
    with pytest.raises(spec.SweepError) as e:
        spec.parse(BASE + sweep, "x")
    assert words in str(e.value)


def test_values_that_collide_in_ids_are_refused():
    with pytest.raises(spec.SweepError, match="same cell id"):
        spec.parse(BASE + "[sweep]\nvm.append = a b, a_b\n", "x")


SETS = ("[sweep]\nworkload = kmix, lockbench\nvm.lock = ticket\n"
        "[sweep.workload.kmix]\nworkload.program = kmix\nworkload.kmix = off\n"
        "workload.throughput-classes = proc_table,address_space,pmm,heap\n"
        "[sweep.workload.lockbench]\nworkload.program = lockbench\nworkload.args = --locks 1 --cs-cycles 200\n"
        "[run]\nduration = 3\n")


def test_a_set_axis_changes_its_options_together():
    s = spec.parse(BASE + SETS, "x")
    assert [a.key for a in s.axes] == ["workload", "vm.lock"]
    assert [c.id for c in s.cells] == ["workload-kmix_lock-ticket", "workload-lockbench_lock-ticket"]
    assert s.cells[0].values == {"workload": "kmix", "vm.lock": "ticket"}
    assert s.cells[0].overrides() == ["--workload.program", "kmix", "--workload.kmix", "off",
                                      "--workload.throughput-classes", "proc_table,address_space,pmm,heap",
                                      "--vm.lock", "ticket"]
    assert s.cells[1].overrides() == ["--workload.program", "lockbench", "--workload.args",
                                      "--locks 1 --cs-cycles 200", "--vm.lock", "ticket"]
    assert "sweep" not in s.base_text and "workload.program" not in s.base_text
    assert "duration = 3" in s.base_text  # a section after the set sections is the base's again


@pytest.mark.parametrize("sweep, words", [
    ("[sweep]\nworkload = kmix\n", "no section [sweep.workload.kmix]"),
    ("[sweep]\nworkload = kmix\n[sweep.workload.kmix]\nhost.x = 1\n", "'host.x' is not a runner option"),
    ("[sweep]\nworkload = kmix\n[sweep.workload.kmix]\n", "sets no option"),
    ("[sweep]\nworkload = kmix\n[sweep.workload.kmix]\nworkload.kmix = off\n[sweep.workload.other]\nworkload.kmix = on\n",
     "does not list [sweep.workload.other]"),
    ("[sweep]\nvm.lock = tas\n[sweep.workload.kmix]\nworkload.kmix = off\n", "no set axis 'workload'"),
    ("[sweep]\nvm.lock = tas\n[sweep.workload]\nworkload.kmix = off\n", "is not [sweep.KEY.VALUE]"),
])
def test_set_axis_refusals_name_the_problem(sweep, words):
    with pytest.raises(spec.SweepError) as e:
        spec.parse(BASE + sweep, "x")
    assert words in str(e.value)
