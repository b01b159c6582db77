"""Debian's packages for the Linux guest, downloaded and unpacked into build/linux/, never
installed on the host.

- The kernel: the version is resolved through the metapackage linux-image-amd64 (its candidate's
  Depends names linux-image-<release> (= <version>)); Debian replaces that version with each
  kernel update and the mirror drops the old one, so no version is ever pinned here.
- busybox-static: the initramfs's shell and tools.
- Workload packages (rt-tests for hackbench) and the library packages they depend on directly
  (libnuma1); glibc is the host's own (libc6 is on every Debian 12 host, and is the same
  release as these packages).

`apt-get download` fetches each .deb into a fresh temporary folder; `dpkg -x` unpacks it into
a temporary folder that is renamed into place with a stamp naming the version, so an interrupted
fetch leaves nothing half-unpacked and a second fetch of the same versions downloads nothing.

- The kernel's headers, for the ground-truth module (guest/gt/): linux-headers-<release> at the
  kernel's version, and the two packages its Depends names for building modules,
  linux-headers-<...>-common (= that version) and linux-kbuild-<major.minor> (its candidate,
  checked against the Depends' >= bound). The third dependency, linux-compiler-gcc-<N>-x86,
  only pulls in gcc-<N>: the host's own gcc-<N> is used (Debian 12's gcc-12 built the kernel).
  The three are unpacked into one folder, so that their relative symbolic links (scripts ->
  ../../lib/linux-kbuild-<x.y>/scripts) resolve, and the one absolute path in them (the
  headers' Makefile includes /usr/src/linux-headers-<...>-common/Makefile) is rewritten to
  point inside it.

Layout of build/linux/:
  kernel/<package>/            the unpacked kernel package (boot/vmlinuz-*, boot/config-*,
                               lib/modules/<release>/)
  pkgs/<package>/              each other unpacked package
  headers/<release>/           the three header packages in one root (usr/src/..., usr/lib/...)
  kernel.json                  {"package", "version", "release", "vmlinuz", "config",
                                "system_map", "modules", "metapackage", "metapackage_version",
                                "headers": {"dir", "packages", "compiler"}}
  packages.json                {"packages": {name: {"version", "root"}}, "workload_packages": [...]}
"""
import gzip
import io
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from . import paths

KERNEL_METAPACKAGE = "linux-image-amd64"
BUSYBOX_PACKAGE = "busybox-static"
WORKLOAD_PACKAGES = ("rt-tests",)      # hackbench
STAMP = ".spinlab-version"
# Library packages taken from the host rather than downloaded: glibc (ldd runs the host's
# loader, so the guest's libc must be the one ldd resolves against).
HOST_LIBS = ("libc6",)


class FetchError(Exception):
    pass


def log(msg):
    print(f"fetch: {msg}", file=sys.stderr, flush=True)


def _run(argv, cwd=None):
    try:
        return subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    except FileNotFoundError:
        raise FetchError(f"{argv[0]} is not installed (this needs Debian's apt and dpkg)")


_updated = [False]


def apt_show(package):
    """The fields of `package`'s candidate version (apt-cache show --no-all-versions). When
    apt knows no such package and we are root, runs apt-get update once and asks again."""
    for attempt in (0, 1):
        r = _run(["apt-cache", "show", "--no-all-versions", package])
        if r.returncode == 0 and r.stdout.strip():
            return parse_control(r.stdout)
        if attempt == 0 and not _updated[0] and os.geteuid() == 0:
            log(f"apt-cache knows no {package}: running apt-get update once")
            _updated[0] = True
            u = _run(["apt-get", "update", "-qq"])
            if u.returncode != 0:
                raise FetchError(f"apt-get update failed: {u.stderr.strip()[-500:]}")
            continue
        break
    hint = "" if os.geteuid() == 0 else " (run `apt-get update` as root first)"
    raise FetchError(f"apt-cache knows no package {package}{hint}: {r.stderr.strip()[-300:]}")


def parse_control(text):
    """The first stanza of Debian control text as {field: value} (continuation lines joined)."""
    fields, key = {}, None
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        if line[0] in " \t" and key:
            fields[key] += "\n" + line.strip()
        elif ":" in line:
            key, value = line.split(":", 1)
            key = key.strip()
            fields[key] = value.strip()
    return fields


_DEP = re.compile(r"^\s*([a-z0-9][a-z0-9+.-]*)(?::\w+)?\s*(?:\(\s*([<>=]+)\s*([^)\s]+)\s*\))?\s*$")


def parse_depends(value):
    """A Depends value -> [(name, op or None, version or None)], the first of each set of
    alternatives."""
    out = []
    for clause in (value or "").split(","):
        if not clause.strip():
            continue
        first = clause.split("|")[0]
        m = _DEP.match(first)
        if not m:
            raise FetchError(f"cannot read the dependency '{clause.strip()}'")
        out.append((m[1], m[2], m[3]))
    return out


def resolve_kernel():
    """{"metapackage", "metapackage_version", "package", "version", "release"} from the
    candidate of linux-image-amd64."""
    meta = apt_show(KERNEL_METAPACKAGE)
    deps = [d for d in parse_depends(meta.get("Depends")) if d[0].startswith("linux-image-")]
    if not deps:
        raise FetchError(f"{KERNEL_METAPACKAGE} {meta.get('Version')} depends on no "
                         f"linux-image-* package (Depends: {meta.get('Depends')})")
    name, op, version = deps[0]
    if op != "=" or not version:
        version = apt_show(name)["Version"]
    return {"metapackage": KERNEL_METAPACKAGE, "metapackage_version": meta.get("Version"),
            "package": name, "version": version,
            "release": name[len("linux-image-"):]}


def download(package, version, workdir):
    """apt-get download package=version into a fresh folder under workdir; the .deb's path,
    checked to be that package at that version."""
    tmp = Path(tempfile.mkdtemp(prefix=".dl-", dir=workdir))
    os.chmod(tmp, 0o755)   # apt's _apt sandbox user must be able to write here
    r = _run(["apt-get", "download", "-q", f"{package}={version}"], cwd=tmp)
    debs = list(tmp.glob("*.deb"))
    if r.returncode != 0 or len(debs) != 1:
        shutil.rmtree(tmp, ignore_errors=True)
        raise FetchError(f"apt-get download {package}={version} failed: "
                         f"{(r.stderr or r.stdout).strip()[-500:]}")
    deb = debs[0]
    got = {k: deb_field(deb, k) for k in ("Package", "Version")}
    if got != {"Package": package, "Version": version}:
        shutil.rmtree(tmp, ignore_errors=True)
        raise FetchError(f"apt-get download {package}={version} gave {got}")
    return deb


def deb_field(deb, field):
    r = _run(["dpkg-deb", "-f", str(deb), field])
    if r.returncode != 0:
        raise FetchError(f"dpkg-deb -f {deb} {field}: {r.stderr.strip()}")
    return r.stdout.strip()


def installed_version(dest):
    try:
        return (Path(dest) / STAMP).read_text().strip()
    except OSError:
        return None


def _unpack(package, version, deb, into):
    """dpkg -x the downloaded package into `into` (never installed on the host)."""
    log(f"{package} {version}: unpacking {deb.stat().st_size / 1e6:.1f} MB with dpkg -x")
    r = _run(["dpkg", "-x", str(deb), str(into)])
    if r.returncode != 0:
        raise FetchError(f"dpkg -x {deb.name} failed: {r.stderr.strip()[-500:]}")


def _replace(dest, staging):
    """Puts the finished `staging` folder in place of `dest` (a former version is removed)."""
    if dest.exists():
        old = dest.with_name(dest.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        dest.rename(old)
        shutil.rmtree(old, ignore_errors=True)
    staging.rename(dest)


def fetch_package(package, version, dest, workdir):
    """Make dest the unpacked package at version; False when it already was (nothing done)."""
    dest = Path(dest)
    if installed_version(dest) == version:
        log(f"{package} {version}: already unpacked in {dest}")
        return False
    log(f"{package} {version}: downloading")
    deb = download(package, version, workdir)
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{package}-", dir=dest.parent))
        try:
            _unpack(package, version, deb, staging)
            (staging / STAMP).write_text(version + "\n")
            _replace(dest, staging)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    finally:
        shutil.rmtree(deb.parent, ignore_errors=True)
    return True


_COMPRESSED = ((b"\xfd7zXZ\x00", "xz"), (b"\x1f\x8b\x08", "gzip"))


def extract_vmlinux(vmlinuz, dest):
    """Decompress the ELF kernel inside a bzImage (xz or gzip, as Linux's
    scripts/extract-vmlinux does) into dest; False when no stream gives an ELF file."""
    data = Path(vmlinuz).read_bytes()
    for magic, kind in _COMPRESSED:
        at = data.find(magic)
        while at >= 0:
            try:
                if kind == "xz":
                    out = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(data[at:])
                else:
                    out = gzip.GzipFile(fileobj=io.BytesIO(data[at:])).read()
            except (lzma.LZMAError, OSError, EOFError):
                out = b""
            if out[:4] == b"\x7fELF":
                tmp = Path(str(dest) + ".tmp")
                tmp.write_bytes(out)
                tmp.rename(dest)
                return True
            at = data.find(magic, at + 1)
    return False


def config_has(config_path, option):
    try:
        return f"\n{option}=y\n" in "\n" + Path(config_path).read_text()
    except OSError:
        return False


# The kernel options that decide what a lock-holder preemption study of this kernel can see.
LHP_CONFIG = (
    "SMP", "NR_CPUS", "QUEUED_SPINLOCKS", "PARAVIRT", "PARAVIRT_SPINLOCKS", "HYPERVISOR_GUEST",
    "KVM_GUEST", "PVH", "PREEMPT_RT", "PREEMPT", "PREEMPT_VOLUNTARY", "PREEMPT_DYNAMIC", "HZ",
    "KPROBES", "KRETPROBES", "KPROBE_EVENTS", "KPROBES_ON_FTRACE", "OPTPROBES", "FTRACE",
    "DYNAMIC_FTRACE", "FUNCTION_TRACER", "BPF_SYSCALL", "DEBUG_SPINLOCK", "LOCK_STAT",
    "LOCKDEP", "PROVE_LOCKING", "VIRTIO_CONSOLE", "VIRTIO_PCI", "MODULE_COMPRESS_NONE",
)


def config_facts(config_path, names=LHP_CONFIG):
    """{CONFIG_X: value or None (not set)} for names, from a kernel .config."""
    values = {}
    for line in Path(config_path).read_text().splitlines():
        if line.startswith("CONFIG_") and "=" in line:
            k, v = line.split("=", 1)
            values[k] = v.strip('"')
    return {f"CONFIG_{n}": values.get(f"CONFIG_{n}") for n in names}


def library_dependencies(package):
    """The lib* packages `package` depends on directly, except those taken from the host."""
    fields = apt_show(package)
    return [name for name, _, _ in parse_depends(fields.get("Depends"))
            if name.startswith("lib") and name not in HOST_LIBS]


def write_json(path, data):
    tmp = Path(str(path) + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    tmp.rename(path)


def fetch(build=None, workload_packages=WORKLOAD_PACKAGES):
    """Everything the guest image needs, into build (default build/linux/). Returns the kernel
    description written to kernel.json."""
    build = Path(build or paths.build_dir())
    (build / "kernel").mkdir(parents=True, exist_ok=True)
    (build / "pkgs").mkdir(parents=True, exist_ok=True)

    k = resolve_kernel()
    log(f"{KERNEL_METAPACKAGE} {k['metapackage_version']} -> {k['package']} {k['version']}")
    kdir = build / "kernel" / k["package"]
    fetch_package(k["package"], k["version"], kdir, build)
    for other in (build / "kernel").iterdir():
        if other.is_dir() and other.name != k["package"] and not other.name.startswith("."):
            log(f"removing the superseded kernel {other.name}")
            shutil.rmtree(other, ignore_errors=True)
    rel = k["release"]
    kernel = dict(k)
    kernel.update({
        "vmlinuz": str(kdir / "boot" / f"vmlinuz-{rel}"),
        "config": str(kdir / "boot" / f"config-{rel}"),
        "system_map": str(kdir / "boot" / f"System.map-{rel}"),
        "modules": str(kdir / "lib" / "modules" / rel),
    })
    for key in ("vmlinuz", "config", "modules"):
        if not Path(kernel[key]).exists():
            raise FetchError(f"{k['package']} {k['version']} has no {kernel[key]}")
    vmlinux = kdir / "vmlinux"     # inside the unpacked folder: replaced with its version
    kernel["vmlinux"] = None
    if config_has(kernel["config"], "CONFIG_PVH"):
        if vmlinux.is_file():
            kernel["vmlinux"] = str(vmlinux)
        else:
            log(f"decompressing {Path(kernel['vmlinuz']).name} into {vmlinux.name} (PVH boot)")
            if extract_vmlinux(kernel["vmlinuz"], vmlinux):
                kernel["vmlinux"] = str(vmlinux)
            else:
                log("no xz or gzip stream in vmlinuz gives an ELF kernel: booting vmlinuz")
    kernel["boot_kernel"] = kernel["vmlinux"] or kernel["vmlinuz"]
    kernel["config_facts"] = config_facts(kernel["config"])
    kernel["headers"] = fetch_headers(k, build)

    packages = {}
    wanted = [BUSYBOX_PACKAGE]
    for w in workload_packages:
        wanted.append(w)
        wanted.extend(library_dependencies(w))
    for name in dict.fromkeys(wanted):
        version = apt_show(name)["Version"]
        dest = build / "pkgs" / name
        fetch_package(name, version, dest, build)
        packages[name] = {"version": version, "root": str(dest)}
    write_json(build / "packages.json", {"packages": packages,
                                         "workload_packages": list(workload_packages)})
    write_json(build / "kernel.json", kernel)
    return kernel


def _version_ge(a, b):
    """dpkg --compare-versions a ge b."""
    return _run(["dpkg", "--compare-versions", a, "ge", b]).returncode == 0


def resolve_headers(kernel):
    """[(package, version)] to build modules for kernel (resolve_kernel's dict), and the compiler
    the kernel was built with ('gcc-12'): linux-headers-<release> at the kernel's version, the
    linux-headers-*-common it depends on (=), linux-kbuild-* it depends on (its candidate, which
    must satisfy the bound)."""
    name = f"linux-headers-{kernel['release']}"
    show = apt_show(name)
    if show.get("Version") != kernel["version"]:
        raise FetchError(f"apt's {name} is version {show.get('Version')}, the kernel "
                         f"{kernel['package']} is {kernel['version']} (apt-get update?)")
    deps = parse_depends(show.get("Depends"))
    out = [(name, kernel["version"])]
    common = [d for d in deps if d[0].startswith("linux-headers-") and d[0].endswith("-common")]
    kbuild = [d for d in deps if d[0].startswith("linux-kbuild-")]
    if len(common) != 1 or len(kbuild) != 1:
        raise FetchError(f"{name} {kernel['version']} does not depend on exactly one "
                         f"linux-headers-*-common and one linux-kbuild-* package "
                         f"(Depends: {show.get('Depends')})")
    cname, cop, cver = common[0]
    if cop == "=" and cver:
        out.append((cname, cver))
    else:
        out.append((cname, apt_show(cname)["Version"]))
    kname, kop, kver = kbuild[0]
    have = apt_show(kname)["Version"]
    if kver and kop in (">=", "=") and not (_version_ge(have, kver) if kop == ">=" else have == kver):
        raise FetchError(f"{name} needs {kname} ({kop} {kver}), apt has {have}")
    out.append((kname, have))
    compiler = None
    for d, _, _ in deps:
        m = re.fullmatch(r"linux-compiler-(gcc-\d+)-\w+", d)
        if m:
            compiler = m[1]
    return out, compiler


HEADERS_STAMP_PREFIX = "headers "


def fetch_headers(kernel, build):
    """build/linux/headers/<release>/ holding linux-headers-<release>, its -common and
    linux-kbuild-* packages unpacked into one root, the Makefile's absolute include rewritten.
    Returns kernel.json's "headers" entry. A second call with the same versions downloads
    nothing; another kernel release's folder is removed."""
    build = Path(build)
    packages, compiler = resolve_headers(kernel)
    root = build / "headers"
    root.mkdir(parents=True, exist_ok=True)
    dest = root / kernel["release"]
    stamp = HEADERS_STAMP_PREFIX + " ".join(f"{p}={v}" for p, v in packages)
    hdir = dest / "usr" / "src" / f"linux-headers-{kernel['release']}"
    if installed_version(dest) == stamp and (hdir / "Makefile").is_file():
        log(f"kernel headers {' '.join(f'{p} {v}' for p, v in packages)}: already unpacked")
        fix_headers_makefile(hdir, dest)
    else:
        staging = Path(tempfile.mkdtemp(prefix=".headers-", dir=root))
        try:
            for package, version in packages:
                log(f"{package} {version}: downloading")
                deb = download(package, version, build)
                try:
                    _unpack(package, version, deb, staging)
                finally:
                    shutil.rmtree(deb.parent, ignore_errors=True)
            fix_headers_makefile(staging / hdir.relative_to(dest), dest)
            (staging / STAMP).write_text(stamp + "\n")
            _replace(dest, staging)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    for other in root.iterdir():
        if other.is_dir() and other.name != kernel["release"] and not other.name.startswith("."):
            log(f"removing the superseded kernel headers {other.name}")
            shutil.rmtree(other, ignore_errors=True)
    return {"dir": str(hdir), "packages": dict(packages), "compiler": compiler}


_INCLUDE = re.compile(r"^include (\S*?)(/usr/src/linux-headers-[^/\s]+/Makefile)$", re.M)


def fix_headers_makefile(headers_dir, final_root):
    """Debian's linux-headers-<release>/Makefile is `include /usr/src/linux-headers-<...>-common/
    Makefile`: point it at the copy under final_root (the folder the unpacked root will have).
    Idempotent; a build/ folder that moved is pointed at its new place."""
    mk = Path(headers_dir) / "Makefile"
    try:
        text = mk.read_text()
    except OSError as e:
        raise FetchError(f"the kernel headers have no {mk}: {e.strerror}")
    new, n = _INCLUDE.subn(lambda m: f"include {Path(final_root)}{m[2]}", text)
    if n != 1:
        raise FetchError(f"{mk} has no single 'include /usr/src/linux-headers-.../Makefile' "
                         f"line to point at the unpacked copy:\n{text[:500]}")
    if new != text:
        mk.write_text(new)


def boot_kernel(kernel):
    """The file QEMU boots of a kernel.json: the ELF vmlinux (PVH) where there is one, else vmlinuz."""
    return kernel.get("boot_kernel") or kernel["vmlinuz"]


def load_kernel_json(build=None):
    path = Path(build or paths.build_dir()) / "kernel.json"
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise FetchError(f"no {path}: run vm-images/linux/spinlab-linux fetch first")


def load_packages_json(build=None):
    path = Path(build or paths.build_dir()) / "packages.json"
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise FetchError(f"no {path}: run vm-images/linux/spinlab-linux fetch first")
