"""names.py: the ABI's names come from the build's abi_names.json, and a missing or malformed file
is an error that names the file and what to build."""
import json

import pytest

from spinlab_report import NamesFileError, names


def write(tmp_path, data) -> str:
    p = tmp_path / "abi_names.json"
    p.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(p)


def test_enumerators_name_the_values_in_abi_order(tmp_path):
    rows = [{"value": 0, "id": "kA", "name": "a-name"}, {"value": 1, "id": "kB", "name": "b-name"}]
    e = names.load(write(tmp_path, {"enums": {"thing": rows}}))["thing"]
    assert e.names == ("a-name", "b-name") and e.kB == "b-name" and list(e) == ["a-name", "b-name"]
    with pytest.raises(AttributeError, match="thing has no enumerator kC .*it has kA, kB"):
        e.kC


def test_the_build_file_has_every_enum_the_package_uses():
    assert names.PATH and names.LHP_CLASS.kHolderPreempted in names.LHP_CLASS.names
    assert len(names.LOCK_ALGORITHM) >= 4 and names.CLOCK_SOURCE.kLfenceRdtsc in names.CLOCK_SOURCE


def test_missing_file_names_the_paths_and_the_make_target(tmp_path, monkeypatch):
    monkeypatch.setattr(names, "candidates", lambda: [str(tmp_path / "nowhere.json")])
    with pytest.raises(NamesFileError, match=r"abi_names.json .* missing: looked in .*nowhere.json.*make host"):
        names.load()


@pytest.mark.parametrize("data, what", [
    ("{not json", "cannot read"),
    ({"lhp_class": []}, "expected an object with 'enums'"),
    ({"enums": {"x": [{"value": 1, "id": "kA", "name": "a"}]}}, "enum 'x' is missing or not a list"),
    ({"enums": {"x": [{"value": 0, "id": "kA"}]}}, "enum 'x' is missing or not a list"),
])
def test_malformed_file_is_refused_naming_it(tmp_path, data, what):
    path = write(tmp_path, data)
    with pytest.raises(NamesFileError, match=what) as e:
        names.load(path)
    assert path in str(e.value)


def test_the_long_wait_threshold_is_one_number_from_the_abi():
    """The kernel's long-wait= default and the report's --long-wait-threshold default are the ABI's
    kDefaultLongWaitThreshold (spinlab/sysinfo.h), which abi_names.json carries."""
    import inspect
    from spinlab_report import names, summary, trace_replay
    assert names.LONG_WAIT_THRESHOLD == 1 << 20
    assert summary.Options().long_wait_threshold == names.LONG_WAIT_THRESHOLD
    assert inspect.signature(trace_replay.replay).parameters["long_wait_threshold"].default == names.LONG_WAIT_THRESHOLD


def test_a_names_file_without_the_constant_is_a_clear_error(tmp_path):
    from spinlab_report import NamesFileError, names
    f = tmp_path / "abi_names.json"
    f.write_text('{"enums": {}}')
    with pytest.raises(NamesFileError, match="constant 'long_wait_threshold' is missing"):
        names.constant(str(f), "long_wait_threshold")
