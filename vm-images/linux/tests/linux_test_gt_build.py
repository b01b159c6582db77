"""The ground-truth module's build: Debian's headers resolved from the kernel package's Depends
(apt faked), their Makefile pointed at the unpacked copy, and the real module built with kbuild
against the fetched headers and carried in the initramfs."""
import gzip
import subprocess
from pathlib import Path

import pytest
from linux_testlib import guest_image  # noqa: F401  (a fixture)
from linux_test_initramfs import read_newc

from spinlab_linux import fetch, initramfs, paths

KERNEL = {"metapackage": "linux-image-amd64", "metapackage_version": "7.3.1-1",
          "package": "linux-image-7.3.0-9-amd64", "version": "7.3.1-1", "release": "7.3.0-9-amd64"}

HEADERS_SHOW = """Package: linux-headers-7.3.0-9-amd64
Source: linux
Version: 7.3.1-1
Depends: linux-headers-7.3.0-9-common (= 7.3.1-1), linux-kbuild-7.3 (>= 7.3.1-1), linux-compiler-gcc-14-x86
Description: Header files for Linux 7.3.0-9-amd64

"""


class FakeApt:
    def __init__(self, shows, newer=True):
        self.shows, self.newer, self.calls = shows, newer, []

    def __call__(self, argv, cwd=None):
        self.calls.append(argv)
        if argv[:2] == ["apt-cache", "show"]:
            text = self.shows.get(argv[-1])
            return subprocess.CompletedProcess(argv, 0 if text else 100, text or "", "")
        if argv[:2] == ["dpkg", "--compare-versions"]:
            return subprocess.CompletedProcess(argv, 0 if self.newer else 1, "", "")
        raise AssertionError(f"unexpected command {argv}")


def show(name, version):
    return f"Package: {name}\nVersion: {version}\n\n"


def test_headers_follow_the_kernel_packages_depends(monkeypatch):
    apt = FakeApt({"linux-headers-7.3.0-9-amd64": HEADERS_SHOW,
                   "linux-kbuild-7.3": show("linux-kbuild-7.3", "7.3.1-2")})
    monkeypatch.setattr(fetch, "_run", apt)
    pkgs, compiler = fetch.resolve_headers(KERNEL)
    assert pkgs == [("linux-headers-7.3.0-9-amd64", "7.3.1-1"),
                    ("linux-headers-7.3.0-9-common", "7.3.1-1"),   # = the kernel's, from Depends
                    ("linux-kbuild-7.3", "7.3.1-2")]                # the candidate, >= checked
    assert compiler == "gcc-14"
    assert ["dpkg", "--compare-versions", "7.3.1-2", "ge", "7.3.1-1"] in apt.calls


def test_headers_of_another_version_are_refused(monkeypatch):
    monkeypatch.setattr(fetch, "_run", FakeApt({"linux-headers-7.3.0-9-amd64":
                                                HEADERS_SHOW.replace("Version: 7.3.1-1", "Version: 7.3.2-1")}))
    with pytest.raises(fetch.FetchError, match="is version 7.3.2-1, the kernel .* is 7.3.1-1"):
        fetch.resolve_headers(KERNEL)


def test_a_kbuild_too_old_is_refused(monkeypatch):
    monkeypatch.setattr(fetch, "_run", FakeApt({"linux-headers-7.3.0-9-amd64": HEADERS_SHOW,
                                                "linux-kbuild-7.3": show("linux-kbuild-7.3", "7.3.0-1")},
                                               newer=False))
    with pytest.raises(fetch.FetchError, match=r"needs linux-kbuild-7.3 \(>= 7.3.1-1\), apt has 7.3.0-1"):
        fetch.resolve_headers(KERNEL)


def test_headers_without_a_common_package_are_refused(monkeypatch):
    monkeypatch.setattr(fetch, "_run", FakeApt({"linux-headers-7.3.0-9-amd64": HEADERS_SHOW.replace(
        "linux-headers-7.3.0-9-common (= 7.3.1-1), ", "")}))
    with pytest.raises(fetch.FetchError, match="exactly one linux-headers-\\*-common"):
        fetch.resolve_headers(KERNEL)


def test_the_makefile_include_points_inside_the_unpacked_root(tmp_path):
    d = tmp_path / "usr/src/linux-headers-7.3.0-9-amd64"
    d.mkdir(parents=True)
    mk = d / "Makefile"
    mk.write_text("include /usr/src/linux-headers-7.3.0-9-common/Makefile\n")
    fetch.fix_headers_makefile(d, "/b/headers/7.3.0-9-amd64")
    assert mk.read_text() == "include /b/headers/7.3.0-9-amd64/usr/src/linux-headers-7.3.0-9-common/Makefile\n"
    fetch.fix_headers_makefile(d, "/moved/headers/7.3.0-9-amd64")     # a build folder that moved
    assert mk.read_text() == "include /moved/headers/7.3.0-9-amd64/usr/src/linux-headers-7.3.0-9-common/Makefile\n"
    mk.write_text("obj-y := x.o\n")
    with pytest.raises(fetch.FetchError, match="no single 'include"):
        fetch.fix_headers_makefile(d, "/b")


def test_the_module_is_built_for_the_fetched_kernel_and_carried(guest_image, tmp_path):
    # guest_image fetched the headers and built the initramfs (and the module with it).
    h = guest_image["headers"]
    assert Path(h["dir"], "Makefile").is_file()
    assert set(h["packages"]) == {f"linux-headers-{guest_image['release']}",
                                  f"linux-headers-{guest_image['release'].rsplit('-', 1)[0]}-common",
                                  f"linux-kbuild-{'.'.join(guest_image['version'].split('.')[:2])}"}
    ko = initramfs.build_gt_module(guest_image, tmp_path / "gt")
    info = initramfs.modinfo(ko)
    assert info["vermagic"][0].split()[0] == guest_image["release"]
    assert info["name"] == ["spinlab_gt"] and info["license"] == ["GPL"]
    assert {p.split(":")[0] for p in info["parm"]} >= {"holder_cpu", "hold_us", "gap_us", "seconds"}
    archive = read_newc(gzip.decompress((paths.build_dir() / "initramfs.cpio.gz").read_bytes()))
    assert archive["lib/spinlab/spinlab_gt.ko"][1] == (paths.build_dir() / "gt" / "spinlab_gt.ko").read_bytes()
