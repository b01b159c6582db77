"""fetch: the kernel's version comes from linux-image-amd64's Depends, never a pinned one; a
second fetch of the same versions downloads nothing; vmlinux comes out of a bzImage. apt is
faked here: no network."""
import lzma
import subprocess
from pathlib import Path

import pytest
import linux_testlib  # noqa: F401  (spinlab_linux on the path)

from spinlab_linux import fetch

META_SHOW = """Package: linux-image-amd64
Source: linux-signed-amd64 (7.3.1+1)
Version: 7.3.1-1
Provides: linux-image-generic,
 wireguard-modules (= 1.0.0)
Depends: linux-image-7.3.0-9-amd64 (= 7.3.1-1)
Description: Linux for 64-bit PCs (meta-package)

"""


class FakeApt:
    def __init__(self, shows):
        self.shows, self.calls = shows, []

    def __call__(self, argv, cwd=None):
        self.calls.append(argv)
        if argv[:2] == ["apt-cache", "show"]:
            text = self.shows.get(argv[-1])
            return subprocess.CompletedProcess(argv, 0 if text else 100, text or "",
                                               "" if text else f"E: No packages found")
        if argv[:2] == ["apt-get", "update"]:
            return subprocess.CompletedProcess(argv, 0, "", "")
        raise AssertionError(f"unexpected command {argv}")


def test_parse_depends():
    assert fetch.parse_depends("linux-image-6.1.0-57-amd64 (= 6.1.192-3)") == [
        ("linux-image-6.1.0-57-amd64", "=", "6.1.192-3")]
    assert fetch.parse_depends("libc6 (>= 2.33), libnuma1 (>= 2.0.11), python3") == [
        ("libc6", ">=", "2.33"), ("libnuma1", ">=", "2.0.11"), ("python3", None, None)]
    assert fetch.parse_depends("a | b, c:any") == [("a", None, None), ("c", None, None)]


def test_the_kernel_is_what_the_metapackage_depends_on(monkeypatch):
    apt = FakeApt({"linux-image-amd64": META_SHOW})
    monkeypatch.setattr(fetch, "_run", apt)
    k = fetch.resolve_kernel()
    assert k == {"metapackage": "linux-image-amd64", "metapackage_version": "7.3.1-1",
                 "package": "linux-image-7.3.0-9-amd64", "version": "7.3.1-1",
                 "release": "7.3.0-9-amd64"}
    assert apt.calls == [["apt-cache", "show", "--no-all-versions", "linux-image-amd64"]]


def test_apt_that_knows_nothing_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(fetch, "_run", FakeApt({}))
    monkeypatch.setattr(fetch, "_updated", [True])      # apt-get update already tried
    with pytest.raises(fetch.FetchError, match="apt-cache knows no package linux-image-amd64"):
        fetch.resolve_kernel()


def test_a_second_fetch_downloads_nothing(monkeypatch, tmp_path):
    downloads = []

    def fake_download(package, version, workdir):
        downloads.append((package, version))
        raise AssertionError("downloaded again")

    monkeypatch.setattr(fetch, "download", fake_download)
    dest = tmp_path / "busybox-static"
    dest.mkdir()
    (dest / fetch.STAMP).write_text("1:1.35.0-4\n")
    assert fetch.fetch_package("busybox-static", "1:1.35.0-4", dest, tmp_path) is False
    assert downloads == []
    with pytest.raises(AssertionError, match="downloaded again"):   # another version: fetched
        fetch.fetch_package("busybox-static", "1:1.36.0-1", dest, tmp_path)


def test_extract_vmlinux(tmp_path):
    elf = b"\x7fELF" + bytes(range(256)) * 64
    bz = tmp_path / "vmlinuz"
    # setup code that happens to hold the xz magic but no stream, then the real payload
    bz.write_bytes(b"MZ" + b"\0" * 500 + b"\xfd7zXZ\x00garbage" + b"\0" * 100 +
                   lzma.compress(elf, format=lzma.FORMAT_XZ) + b"\0" * 64)
    out = tmp_path / "vmlinux"
    assert fetch.extract_vmlinux(bz, out)
    assert out.read_bytes() == elf
    (tmp_path / "plain").write_bytes(b"MZ" + b"\0" * 100)
    assert not fetch.extract_vmlinux(tmp_path / "plain", tmp_path / "none")


def test_config_has(tmp_path):
    c = tmp_path / "config"
    c.write_text("CONFIG_PVH=y\n# CONFIG_XEN is not set\nCONFIG_PVHX=y\n")
    assert fetch.config_has(c, "CONFIG_PVH")
    assert not fetch.config_has(c, "CONFIG_XEN")


def test_config_facts(tmp_path):
    c = tmp_path / "config"
    c.write_text("CONFIG_PARAVIRT_SPINLOCKS=y\n# CONFIG_DEBUG_SPINLOCK is not set\n"
                 "CONFIG_NR_CPUS=8192\nCONFIG_VIRTIO_CONSOLE=m\n")
    f = fetch.config_facts(c)
    assert f["CONFIG_PARAVIRT_SPINLOCKS"] == "y" and f["CONFIG_NR_CPUS"] == "8192"
    assert f["CONFIG_DEBUG_SPINLOCK"] is None and f["CONFIG_VIRTIO_CONSOLE"] == "m"
