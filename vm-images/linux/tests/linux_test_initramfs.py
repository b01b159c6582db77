"""The initramfs's parts on the host: the cpio writer (read back by the cpio tool and by a
reader here), module load order from .modinfo, and the libraries ldd names. No QEMU."""
import gzip
import shutil
import stat
import subprocess

import pytest
import linux_testlib  # noqa: F401  (spinlab_linux on the path)

from spinlab_linux import initramfs


def read_newc(data):
    """{name: (mode, data, (rdevmajor, rdevminor))} from a newc archive."""
    out, off = {}, 0
    while True:
        assert data[off:off + 6] == b"070701", f"bad header at {off}"
        f = [int(data[off + 6 + 8 * i: off + 14 + 8 * i], 16) for i in range(13)]
        namesize, filesize = f[11], f[6]
        name = data[off + 110: off + 110 + namesize - 1].decode()
        off += 110 + namesize
        off += -off % 4
        body = data[off:off + filesize]
        off += filesize
        off += -off % 4
        if name == "TRAILER!!!":
            return out
        out[name] = (f[1], body, (f[9], f[10]))


def test_cpio_entries():
    c = initramfs.Cpio()
    c.file("/init", b"#!/bin/sh\n", 0o755)
    c.file("usr/bin/hackbench", b"\x7fELF...")
    c.symlink("bin/sh", "busybox")
    c.chardev("dev/console", 5, 1)
    a = read_newc(c.bytes())
    assert a["init"][1] == b"#!/bin/sh\n" and stat.S_IMODE(a["init"][0]) == 0o755
    assert stat.S_ISDIR(a["usr"][0]) and stat.S_ISDIR(a["usr/bin"][0])
    assert stat.S_ISLNK(a["bin/sh"][0]) and a["bin/sh"][1] == b"busybox"
    assert stat.S_ISCHR(a["dev/console"][0]) and a["dev/console"][2] == (5, 1)
    assert list(a) == sorted(a)
    assert c.bytes() == c.bytes()                      # deterministic


@pytest.mark.skipif(not shutil.which("cpio"), reason="no cpio tool to cross-check with")
def test_cpio_tool_reads_it(tmp_path):
    c = initramfs.Cpio()
    c.file("etc/spinlab/modules", b"a.ko\n")
    c.chardev("dev/null", 1, 3, 0o666)
    r = subprocess.run(["cpio", "-itv"], input=c.bytes(), capture_output=True)
    assert r.returncode == 0, r.stderr
    listing = r.stdout.decode()
    assert "etc/spinlab/modules" in listing and "dev/null" in listing


def fake_module(tmp_path, rel, depends):
    """A real ELF64 object whose .modinfo says depends=..., as a module's does."""
    src = tmp_path / "m.c"
    src.write_text('__attribute__((section(".modinfo"), used)) static const char a[] = '
                   f'"license=GPL";\n__attribute__((section(".modinfo"), used)) static const '
                   f'char b[] = "depends={depends}";\n')
    out = tmp_path / "modules" / "kernel" / rel
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["gcc", "-c", "-o", str(out), str(src)], check=True)
    return out


def test_modinfo_and_load_order(tmp_path):
    fake_module(tmp_path, "drivers/virtio/virtio.ko", "")
    fake_module(tmp_path, "drivers/virtio/virtio_ring.ko", "")
    fake_module(tmp_path, "drivers/virtio/virtio_pci.ko", "virtio,virtio_ring,virtio-pci-legacy-dev")
    fake_module(tmp_path, "drivers/virtio/virtio_pci_legacy_dev.ko", "")
    fake_module(tmp_path, "drivers/char/virtio_console.ko", "virtio,virtio_ring")
    (tmp_path / "modules" / "modules.builtin").write_text("kernel/lib/crc32.ko\n")
    assert initramfs.modinfo(tmp_path / "modules/kernel/drivers/virtio/virtio_pci.ko")["depends"] == [
        "virtio,virtio_ring,virtio-pci-legacy-dev"]
    order = [n for n, _ in initramfs.module_load_order(tmp_path / "modules")]
    assert sorted(order) == ["virtio", "virtio_console", "virtio_pci", "virtio_pci_legacy_dev",
                             "virtio_ring"]
    for later, earlier in (("virtio_pci", "virtio"), ("virtio_pci", "virtio_ring"),
                           ("virtio_pci", "virtio_pci_legacy_dev"), ("virtio_console", "virtio")):
        assert order.index(earlier) < order.index(later)


def test_missing_module_is_named(tmp_path):
    fake_module(tmp_path, "drivers/char/virtio_console.ko", "virtio")
    with pytest.raises(initramfs.InitramfsError, match="module virtio is neither"):
        initramfs.module_load_order(tmp_path / "modules", ["virtio_console"])


def test_shared_libraries_of_a_host_binary():
    libs = dict(initramfs.shared_libraries(shutil.which("ls"), []))
    assert "libc.so.6" in libs
    assert any(name.startswith("/") and "ld-linux" in name for name in libs)   # the loader
