"""The Linux guest's initramfs: busybox, /init, the agent, the virtio-serial modules and the
workloads with their shared libraries, as a cpio.gz written here (no cpio tool, no root: device
nodes and owners are written into the archive directly). The archive is deterministic: sorted
entries, owner root, mtime 0, gzip without a timestamp.

Contents:
  /init                          vm-images/linux/guest/init
  /bin/busybox                   busybox-static (applet links are made at boot)
  /sbin/spinlab-agent            vm-images/linux/guest/agent.c, gcc -static -O2
  /lib/spinlab/spinlab_gt.ko     the ground-truth module (guest/gt/), built with kbuild against
                                 the fetched headers (build/linux/gt/)
  /lib/modules/<release>/...     virtio_console.ko, virtio_pci.ko and what they depend on
  /etc/spinlab/modules           those modules in load order (dependencies first)
  /usr/bin/hackbench             rt-tests
  /lib/x86_64-linux-gnu/...      the workloads' libraries (ldd), /lib64/ld-linux-x86-64.so.2
  /dev/console, /dev/null        character devices 5:1 and 1:3
Beside the archive, initramfs.json lists every file and where it came from.
"""
import gzip
import hashlib
import json
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

from . import fetch, paths

# Modules the guest loads, by name; their dependencies are found in each module's .modinfo.
MODULES = ("virtio_pci", "virtio_console")
# Workload binaries: guest path -> (package, path inside the package).
WORKLOAD_BINARIES = {"/usr/bin/hackbench": ("rt-tests", "usr/bin/hackbench")}
GUEST_LIB_DIR = "/lib/x86_64-linux-gnu"


class InitramfsError(Exception):
    pass


# ---- kernel modules ----

def modinfo(path):
    """The key=value strings of an ELF64 module's .modinfo section, as {key: [values]}."""
    data = Path(path).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise InitramfsError(f"{path}: not a little-endian ELF64 file (a compressed module?)")
    shoff = int.from_bytes(data[0x28:0x30], "little")
    shentsize = int.from_bytes(data[0x3A:0x3C], "little")
    shnum = int.from_bytes(data[0x3C:0x3E], "little")
    shstrndx = int.from_bytes(data[0x3E:0x40], "little")

    def section(i):
        h = data[shoff + i * shentsize: shoff + (i + 1) * shentsize]
        return (int.from_bytes(h[0:4], "little"), int.from_bytes(h[0x18:0x20], "little"),
                int.from_bytes(h[0x20:0x28], "little"))   # name offset, file offset, size

    _, stroff, strsize = section(shstrndx)
    names = data[stroff:stroff + strsize]
    for i in range(shnum):
        name_off, off, size = section(i)
        name = names[name_off:names.index(b"\0", name_off)]
        if name == b".modinfo":
            out = {}
            for item in data[off:off + size].split(b"\0"):
                if b"=" in item:
                    k, v = item.decode(errors="replace").split("=", 1)
                    out.setdefault(k, []).append(v)
            return out
    raise InitramfsError(f"{path}: no .modinfo section")


def module_load_order(modules_dir, wanted=MODULES):
    """[(name, path relative to modules_dir)] for wanted and their dependencies, dependencies
    first. A module the kernel has built in (modules.builtin) is not loaded."""
    modules_dir = Path(modules_dir)
    builtin = set()
    try:
        for line in (modules_dir / "modules.builtin").read_text().split():
            builtin.add(Path(line).name[:-3].replace("-", "_"))
    except OSError:
        pass
    by_name = {}
    for p in (modules_dir / "kernel").rglob("*.ko"):
        by_name[p.name[:-3].replace("-", "_")] = p
    order, seen = [], set()

    def visit(name, chain):
        name = name.replace("-", "_")
        if name in seen or name in builtin:
            return
        if name in chain:
            raise InitramfsError(f"module dependency cycle: {' -> '.join(chain + [name])}")
        if name not in by_name:
            raise InitramfsError(f"module {name} is neither in {modules_dir}/kernel nor built in")
        deps = [d for v in modinfo(by_name[name]).get("depends", []) for d in v.split(",") if d]
        for d in deps:
            visit(d, chain + [name])
        seen.add(name)
        order.append((name, str(by_name[name].relative_to(modules_dir))))

    for m in wanted:
        visit(m, [])
    return order


# ---- libraries ----

def shared_libraries(binary, lib_dirs):
    """[(soname or path, host path)] that binary needs, from ldd with lib_dirs first on the
    search path. The dynamic loader is given by its absolute path."""
    env = dict(os.environ, LD_LIBRARY_PATH=":".join(str(d) for d in lib_dirs))
    r = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise InitramfsError(f"ldd {binary}: {r.stderr.strip() or r.stdout.strip()}")
    out = []
    for line in r.stdout.splitlines():
        line = line.strip()
        if not line or line.startswith("linux-vdso") or "statically linked" in line:
            continue
        if "=> not found" in line:
            raise InitramfsError(f"{binary} needs {line.split()[0]}, which neither the downloaded "
                                 f"packages nor the host have")
        if "=>" in line:
            name, rest = line.split("=>", 1)
            out.append((name.strip(), rest.strip().split(" (")[0]))
        else:
            path = line.split(" (")[0]
            out.append((path, path))
    return out


def package_lib_dirs(packages):
    """Folders holding shared libraries inside the unpacked lib* packages."""
    dirs = []
    for name, info in sorted(packages.items()):
        if not name.startswith("lib"):
            continue
        for sub in ("lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu", "lib", "usr/lib"):
            d = Path(info["root"]) / sub
            if d.is_dir():
                dirs.append(d)
    return dirs


# ---- the agent ----

# The kernel's own code the agent links for spinlab.region=1 (guest/region.cc, channel.cc,
# trace.cc): the region's layout, the clock publication, the perf data records, the channel's
# framing and server, the sysinfo handler, and the trace sessions' area layout and per-CPU
# writer: one writer (and one answerer) of each format.
KERNEL_SOURCES = ("channel/region_header.cc", "channel/clock_area.cc", "lockstat/perf_record.cc",
                  "channel/channel_server.cc", "channel/frame_codec.cc", "channel/crc32c.cc",
                  "sysinfo/sysinfo_handler.cc", "sysinfo/memory_buffer.cc", "lockstat/params.cc",
                  "locktrace/trace_session.cc", "locktrace/stack_settings.cc", "locktrace/writer.cc",
                  "stackwalk/stack_cache.cc")


def build_agent(out_path, cc="gcc", cxx="g++"):
    """Compile guest/agent.c (C) and guest/region.cc, channel.cc, trace.cc with the kernel's
    KERNEL_SOURCES (C++20), linked statically; the binary's path."""
    out_path = Path(out_path)
    tmp = out_path.with_suffix(".tmp")
    kp = paths.REPO / "kernel-patch"
    with tempfile.TemporaryDirectory(prefix="spinlab-agent-") as objdir:
        objs, steps = [], []
        flags = ["-O2", "-Wall", "-Wextra", "-Werror"]
        obj = Path(objdir) / "agent.o"
        steps.append([cc, *flags, "-c", "-o", str(obj), str(paths.GUEST_SRC / "agent.c")])
        objs.append(obj)
        for i, src in enumerate([paths.GUEST_SRC / n for n in ("region.cc", "channel.cc", "trace.cc")]
                                + [kp / s for s in KERNEL_SOURCES]):
            obj = Path(objdir) / f"{i}-{src.stem}.o"
            steps.append([cxx, "-std=c++20", *flags, "-fno-exceptions", "-fno-rtti", "-I", str(kp),
                          "-I", str(kp / "abi"), "-c", "-o", str(obj), str(src)])
            objs.append(obj)
        steps.append([cxx, "-static", "-pthread", "-o", str(tmp), *map(str, objs)])
        for cmd in steps:
            try:
                r = subprocess.run(cmd, capture_output=True, text=True)
            except FileNotFoundError:
                raise InitramfsError(f"{cmd[0]} is not installed (build-essential)")
            if r.returncode != 0:
                err = r.stderr.strip()
                hint = " (glibc's static libc.a is in libc6-dev)" if "cannot find -lc" in err else ""
                raise InitramfsError(f"compiling the agent failed{hint}: {' '.join(cmd)}\n{err}")
    tmp.rename(out_path)
    return out_path


# ---- the ground-truth module ----

GT_MODULE = "spinlab_gt"
GT_GUEST_PATH = f"/lib/spinlab/{GT_MODULE}.ko"


def build_gt_module(kernel, out_dir, make="make"):
    """Build guest/gt/spinlab_gt.c with kbuild (make -C <headers> M=out_dir modules) against
    the fetched headers (kernel.json's "headers"), with the compiler the kernel was built with
    (the headers' Makefile names it: gcc-12 on Debian 12, the host's own). The .ko's path,
    checked to carry the kernel's release in its vermagic. Unsigned: Debian's kernel loads it
    and marks itself tainted."""
    headers = kernel.get("headers")
    if not headers or not Path(headers["dir"], "Makefile").is_file():
        raise InitramfsError("no kernel headers in build/linux/ (kernel.json has no 'headers'): "
                             "run spinlab-linux fetch")
    compiler = headers.get("compiler")
    if compiler and not shutil.which(compiler):
        raise InitramfsError(f"the kernel was built with {compiler}, which the host does not "
                             f"have (apt-get install {compiler}): the module must be built with it")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in ("Kbuild", f"{GT_MODULE}.c"):
        src = paths.GUEST_SRC / "gt" / name
        dst = out_dir / name
        if not dst.exists() or dst.read_bytes() != src.read_bytes():
            shutil.copyfile(src, dst)
    cmd = [make, "-s", "-C", headers["dir"], f"M={out_dir}", "modules"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True)
    except FileNotFoundError:
        raise InitramfsError(f"{make} is not installed (build-essential)")
    ko = out_dir / f"{GT_MODULE}.ko"
    if r.returncode != 0 or not ko.is_file():
        raise InitramfsError(f"building the ground-truth module failed: {' '.join(cmd)}\n"
                             f"{(r.stderr or r.stdout).strip()[-3000:]}")
    vermagic = (modinfo(ko).get("vermagic") or [""])[0]
    if vermagic.split(" ")[0] != kernel["release"]:
        raise InitramfsError(f"{ko}: vermagic '{vermagic}', not for kernel {kernel['release']}")
    return ko


# ---- cpio (newc) ----

class Cpio:
    """A newc archive built in memory: directories, files, symlinks, character devices."""

    def __init__(self):
        self.entries = {}   # path -> (mode, data bytes, rdev (major, minor))

    def dir(self, path):
        parts = Path(path.lstrip("/")).parts
        for i in range(1, len(parts) + 1):
            self.entries.setdefault("/".join(parts[:i]), (stat.S_IFDIR | 0o755, b"", (0, 0)))

    def _parent(self, path):
        parent = str(Path(path).parent)
        if parent != ".":
            self.dir(parent)

    def file(self, path, data, mode=0o644):
        path = path.lstrip("/")
        self._parent(path)
        self.entries[path] = (stat.S_IFREG | mode, data, (0, 0))

    def symlink(self, path, target):
        path = path.lstrip("/")
        self._parent(path)
        self.entries[path] = (stat.S_IFLNK | 0o777, target.encode(), (0, 0))

    def chardev(self, path, major, minor, mode=0o600):
        path = path.lstrip("/")
        self._parent(path)
        self.entries[path] = (stat.S_IFCHR | mode, b"", (major, minor))

    def bytes(self):
        out = bytearray()

        def pad4():
            out.extend(b"\0" * (-len(out) % 4))

        def entry(ino, name, mode, data, rdev):
            nlink = 2 if stat.S_ISDIR(mode) else 1
            fields = [ino, mode, 0, 0, nlink, 0, len(data), 0, 0, rdev[0], rdev[1],
                      len(name) + 1, 0]
            out.extend(b"070701" + b"".join(b"%08X" % f for f in fields))
            out.extend(name.encode() + b"\0")
            pad4()
            out.extend(data)
            pad4()

        for ino, path in enumerate(sorted(self.entries), start=1):
            mode, data, rdev = self.entries[path]
            entry(ino, path, mode, data, rdev)
        entry(0, "TRAILER!!!", 0, b"", (0, 0))
        return bytes(out)


def build(build=None, out=None, cc="gcc"):
    """Build the initramfs from what fetch put in build/linux/; returns its manifest (also
    written to initramfs.json beside the archive)."""
    build = Path(build or paths.build_dir())
    kernel = fetch.load_kernel_json(build)
    pkgs = fetch.load_packages_json(build)["packages"]
    out = Path(out or paths.initramfs_path(build))
    cpio = Cpio()
    manifest = {"kernel_release": kernel["release"], "kernel_version": kernel["version"],
                "files": {}}

    def add(guest_path, host_path, mode=None):
        data = Path(host_path).read_bytes()
        if mode is None:
            mode = 0o755 if os.access(host_path, os.X_OK) else 0o644
        cpio.file(guest_path, data, mode)
        manifest["files"][guest_path] = {"from": str(host_path),
                                         "sha256": hashlib.sha256(data).hexdigest()}

    for d in ("proc", "sys", "dev", "tmp", "bin", "sbin", "etc/spinlab", "usr/bin", "root"):
        cpio.dir(d)
    cpio.chardev("dev/console", 5, 1)
    cpio.chardev("dev/null", 1, 3, 0o666)
    add("/init", paths.GUEST_SRC / "init", 0o755)
    busybox = Path(pkgs[fetch.BUSYBOX_PACKAGE]["root"]) / "bin" / "busybox"
    add("/bin/busybox", busybox, 0o755)
    cpio.symlink("bin/sh", "busybox")
    agent = build_agent(build / "spinlab-agent", cc)
    add("/sbin/spinlab-agent", agent, 0o755)

    gt = build_gt_module(kernel, build / "gt")
    add(GT_GUEST_PATH, gt, 0o644)
    manifest["gt_module"] = GT_GUEST_PATH

    modules_dir = Path(kernel["modules"])
    order = module_load_order(modules_dir)
    rel = kernel["release"]
    for _, relpath in order:
        add(f"/lib/modules/{rel}/{relpath}", modules_dir / relpath, 0o644)
    cpio.file("etc/spinlab/modules",
              "".join(f"{rel}/{relpath}\n" for _, relpath in order).encode())
    manifest["modules"] = [name for name, _ in order]

    lib_dirs = package_lib_dirs(pkgs)
    libs = {}
    for guest_path, (pkg, inner) in WORKLOAD_BINARIES.items():
        if pkg not in pkgs:
            raise InitramfsError(f"{pkg} was not fetched: run spinlab-linux fetch")
        binary = Path(pkgs[pkg]["root"]) / inner
        add(guest_path, binary, 0o755)
        for name, host in shared_libraries(binary, lib_dirs):
            libs[name] = host
    for name, host in sorted(libs.items()):
        real = os.path.realpath(host)
        if name.startswith("/"):       # the loader, at the path the binary's PT_INTERP names
            add(name, real, 0o755)
        else:
            add(f"{GUEST_LIB_DIR}/{name}", real, 0o755)
    manifest["workloads"] = sorted(WORKLOAD_BINARIES)

    data = cpio.bytes()
    tmp = out.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0, compresslevel=6) as gz:
            gz.write(data)
    tmp.rename(out)
    manifest["initramfs"] = str(out)
    from . import clock                      # the host's half of the clock, built with the rest
    try:
        manifest["clock_helper"] = str(clock.build_helper(build / clock.HELPER, cc))
    except clock.ClockError as e:
        raise InitramfsError(str(e))
    manifest["sha256"] = hashlib.sha256(out.read_bytes()).hexdigest()
    fetch.write_json(out.with_name(out.name.split(".")[0] + ".json"), manifest)
    return manifest
