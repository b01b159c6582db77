"""VM configuration: every bad value is refused with a sentence naming it
(vm-images/spinlab_vm/config.py)."""
import pytest

from spinlab_vm import config
from spinlab_vm.config import VmConfig, VmError


def cfg(tmp_path, **kw):
    k = tmp_path / "k.elf"
    k.write_bytes(b"\x7fELF")
    kw.setdefault("kernel", str(k))
    kw.setdefault("initrd", "")
    return VmConfig(name=kw.pop("name", "lab1"), **kw)


def test_names():
    for good in ("lab1", "a", "run-3.x_y", "A" * 32):
        assert config.check_name(good) == good
    for bad in ("", "-x", ".", "..", "a/b", "a b", "A" * 33, "é"):
        with pytest.raises(VmError, match="VM name"):
            config.check_name(bad)


def test_pin_parsing():
    host = {0, 1, 2, 3}
    assert config.parse_pin("0,1", host) == (0, 1)
    assert config.parse_pin("2,0-1", host) == (2, 0, 1)
    assert config.parse_pin("3", host) == (3,)
    with pytest.raises(VmError, match="host CPU 7 is not available"):
        config.parse_pin("0,7", host)
    with pytest.raises(VmError, match="expected host CPU numbers"):
        config.parse_pin("0,x", host)
    with pytest.raises(VmError, match="runs backwards"):
        config.parse_pin("3-1", host)


def test_valid_config_passes(tmp_path):
    c = config.validate(cfg(tmp_path, cpus=4, memory_mb=512, shm_size_mb=32, pin=(0, 1, 0, 1)))
    assert c.kernel.endswith("k.elf")


@pytest.mark.parametrize("field,value,message", [
    ("cpus", 0, "--cpus 0: must be a whole number from 1 to 64"),
    ("cpus", 65, "--cpus 65"),
    ("memory_mb", 10, "--memory 10"),
    ("shm_size_mb", 24, "--shm-size 24: must be a power of two"),
    ("shm_size_mb", 0, "--shm-size 0"),
    ("backend", "xen", "--backend 'xen'"),
    ("append", "a\nb", "--append"),
    ("pin", (0,), "--pin lists 1 host CPUs for 2 vCPUs"),
    ("initrd", "/nonexistent/r.tar", "--initrd /nonexistent/r.tar: no such file"),
])
def test_bad_values_are_named(tmp_path, field, value, message):
    with pytest.raises(VmError, match=message.replace("(", r"\(")) as e:
        config.validate(cfg(tmp_path, **{field: value}))
    assert e.value.status == config.EXIT_USAGE


def test_missing_kernel_says_run_make_kernel(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "DEFAULT_KERNEL", tmp_path / "build" / "spinlab.elf")
    with pytest.raises(VmError, match="run make kernel first"):
        config.validate(cfg(tmp_path, kernel=str(tmp_path / "build" / "spinlab.elf")))
    with pytest.raises(VmError, match="--kernel /nope.elf: no such file"):
        config.validate(cfg(tmp_path, kernel="/nope.elf"))
