"""The freeze injector's names (issue 53): `spinlab-linux run --freeze-vcpus` runs `spinlab-load
freeze` into freezes.csv, and summary.json's config says `freeze`. Their old names still work:
--preempt-vcpus (old name of --freeze-vcpus) on the command line, and in a run folder written
before the rename preempt.csv (old name of freezes.csv) and config.preempt (old name of
config.freeze), which `spinlab-linux groundtruth DIR` reads. No QEMU."""
import pytest

import linux_testlib  # noqa: F401  (spinlab_linux on the path)

from spinlab_linux import boot, cli, groundtruth


def run_config(monkeypatch, tmp_path, *args):
    """The GuestConfig `spinlab-linux run ARGS` would boot (run_guest stubbed out)."""
    seen = []

    def stop(cfg, out, log=None):
        seen.append(cfg)
        raise boot.GuestError("stubbed")
    monkeypatch.setattr(boot, "run_guest", stop)
    assert cli.main(["run", "--out", str(tmp_path / "out"), *args]) == 1
    return seen[0]


@pytest.mark.parametrize("option", ["--freeze-vcpus", "--preempt-vcpus"])  # the name, its old name
def test_the_freeze_option_and_its_old_name(monkeypatch, tmp_path, option):
    cfg = run_config(monkeypatch, tmp_path, option, "1,3", "--freeze-ms", "20", "--period-ms", "50")
    assert cfg.freeze == {"vcpus": [1, 3], "freeze_ms": 20, "period_ms": 50}
    assert cfg.go


def test_no_freeze_without_the_option(monkeypatch, tmp_path):
    cfg = run_config(monkeypatch, tmp_path)
    assert cfg.freeze is None and not cfg.go


def test_the_help_says_the_old_name_as_old_name():
    run = next(a for a in cli.parser()._subparsers._group_actions[0].choices["run"]._actions
               if "--preempt-vcpus" in a.option_strings)
    assert run.option_strings == ["--freeze-vcpus", "--preempt-vcpus"] and run.dest == "freeze_vcpus"
    assert run.help == ("run spinlab-load freeze freezing these vCPUs (freezes.csv); --preempt-vcpus: "
                        "old name of --freeze-vcpus")


def test_the_freeze_record_of_a_run_folder_and_its_old_name(tmp_path):
    assert groundtruth.freeze_record_path(tmp_path) is None
    (tmp_path / "preempt.csv").write_text("old\n")
    assert groundtruth.freeze_record_path(tmp_path) == tmp_path / "preempt.csv"
    (tmp_path / "freezes.csv").write_text("new\n")
    assert groundtruth.freeze_record_path(tmp_path) == tmp_path / "freezes.csv"


def test_the_freeze_config_of_a_summary_and_its_old_name():
    freeze = {"vcpus": [1], "freeze_ms": 30, "period_ms": 100}
    assert groundtruth.freeze_config({"config": {"freeze": freeze}}) == freeze
    assert groundtruth.freeze_config({"config": {"preempt": freeze}}) == freeze   # before issue 53
    assert groundtruth.freeze_config({"config": {"freeze": None, "timeline": True}}) is None
