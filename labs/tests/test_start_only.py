"""`spinlab lab start N --only RUN,...`: the runs picked, and the errors that name a bad pick."""
from conftest import BIN
from spinlab_labs import cli, registry


def names(runs) -> list:
    return [r[0] for r in runs]


def test_only_picks_the_named_runs_in_the_labs_order():
    lab5 = registry.lab(5)
    assert names(cli._selected(lab5, ["verify", "student"])) == ["student", "verify"]
    assert names(cli._selected(lab5, None)) == names(lab5.module.RUNS)


def test_only_refuses_a_run_the_lab_does_not_have(capsys):
    assert cli.main(["start", "3", "--only", "tas,mutex"], BIN) == 2
    err = capsys.readouterr().err
    assert "lab 3 has no run 'mutex'" in err and "tas, ticket, mcs, pv" in err


def test_only_refuses_a_single_run_lab_and_an_empty_list(capsys):
    assert cli.main(["start", "2", "--only", "x"], BIN) == 2
    assert "lab 2 has a single run" in capsys.readouterr().err
    assert cli.main(["start", "3", "--only"], BIN) == 2
    assert "--only needs run names" in capsys.readouterr().err
