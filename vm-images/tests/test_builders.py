"""The command builders: QEMU argv (spinlab_vm/qemu.py) and libvirt domain XML
(spinlab_vm/libvirt.py with vm-images/libvirt-domain.xml), for spinlab's kernel and a Linux
guest (spinlab_vm/linux_guest.py)."""
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from spinlab_vm import libvirt, linux_guest, qemu
from spinlab_vm.config import VmConfig, VmError
from spinlab_vm.state import Paths

QEMU_NS = "{http://libvirt.org/schemas/domain/qemu/1.0}"


def config(**kw):
    base = dict(name="lab1", cpus=2, memory_mb=256, kernel="/k/spinlab.elf",
                initrd="/k/initrd.tar", append="selftest=smp")
    base.update(kw)
    return VmConfig(**base)


def options(argv, flag):
    return [argv[i + 1] for i, a in enumerate(argv) if a == flag]


def test_qemu_argv_wires_console_channel_qmp_and_region(tmp_path):
    p = Paths("lab1", tmp_path)
    argv = qemu.build_argv(config(cpus=3, shm_size_mb=32), "tcg", p, qemu="/usr/bin/qemu")
    assert argv[0] == "/usr/bin/qemu"
    assert options(argv, "-name") == ["lab1,debug-threads=on"]
    assert options(argv, "-smp") == ["3"] and options(argv, "-m") == ["256"]
    assert options(argv, "-append") == ["selftest=smp"]
    assert options(argv, "-initrd") == ["/k/initrd.tar"]
    assert options(argv, "-accel") == ["tcg,thread=multi"]
    # COM1 is the first -serial, COM2 the second: console file, then the control socket.
    assert options(argv, "-serial") == ["chardev:console", "chardev:control"]
    chardevs = options(argv, "-chardev")
    assert f"file,id=console,path={p.console_log}" in chardevs
    assert f"socket,id=control,path={p.control_socket},server=on,wait=off" in chardevs
    assert f"socket,id=qmp,path={p.qmp_socket},server=on,wait=off" in chardevs
    # Each chardev is defined before the -serial that uses it.
    assert argv.index(f"file,id=console,path={p.console_log}") < argv.index("chardev:console")
    assert options(argv, "-mon") == ["chardev=qmp,mode=control"]
    assert options(argv, "-object") == [
        "memory-backend-file,id=spinlab-shm,share=on,mem-path=/dev/shm/spinlab-lab1,size=32M"]
    assert "ivshmem-plain,memdev=spinlab-shm,bus=pcie.0,addr=0x5" in options(argv, "-device")
    assert "isa-debug-exit,iobase=0xf4,iosize=0x04" in options(argv, "-device")
    assert options(argv, "-pidfile") == [str(p.pid_file)]
    assert options(argv, "-bios") == ["/usr/share/qemu/qboot.rom"]


def test_qemu_argv_kvm_and_escaping(tmp_path):
    p = Paths("lab1", tmp_path)
    argv = qemu.build_argv(config(initrd=""), "kvm", p)
    assert options(argv, "-accel") == ["kvm"]
    assert options(argv, "-cpu") == ["host,-arch-capabilities"]
    assert "-initrd" not in argv
    assert qemu.esc("/a,b") == "/a,,b"


def test_paths_refuse_commas_and_long_socket_paths(tmp_path):
    with pytest.raises(VmError, match="comma"):
        Paths("lab1", tmp_path / "a,b")
    with pytest.raises(VmError, match="longer than 107 bytes"):
        Paths("lab1", tmp_path / ("x" * 100))


def render(tmp_path, accel="tcg", **kw):
    xml = libvirt.render_xml(config(**kw), accel, Paths(kw.get("name", "lab1"), tmp_path),
                             "inst123", emulator="/usr/bin/qemu-system-x86_64")
    return ET.fromstring(xml)


def test_libvirt_xml_tcg(tmp_path):
    d = render(tmp_path, cpus=3, memory_mb=512, shm_size_mb=16)
    assert d.get("type") == "qemu"
    assert d.findtext("name") == "spinlab-lab1"
    assert d.findtext("vcpu") == "3"
    assert d.find("memory").text == "512" and d.find("memory").get("unit") == "MiB"
    os_ = d.find("os")
    assert os_.findtext("kernel") == "/k/spinlab.elf"
    assert os_.findtext("initrd") == "/k/initrd.tar"
    assert os_.findtext("cmdline") == "selftest=smp"
    assert os_.find("type").get("machine") == "q35"
    loader = os_.find("loader")
    assert loader is not None and loader.text == libvirt.QBOOT and loader.get("type") == "rom"
    assert d.find("features/acpi") is not None   # the kernel needs the ACPI tables (MADT)
    assert d.find("cpu").get("mode") == "maximum"
    serials = d.findall("devices/serial")
    assert [s.find("target").get("port") for s in serials] == ["0", "1"]
    assert serials[0].get("type") == "file"
    assert serials[0].find("source").get("path") == str(tmp_path / "vm/lab1/console.log")
    assert serials[1].get("type") == "unix"
    assert serials[1].find("source").get("mode") == "bind"
    assert serials[1].find("source").get("path") == str(tmp_path / "vm/lab1/control.sock")
    shmem = d.find("devices/shmem")
    assert shmem.get("name") == "spinlab-lab1"   # libvirt maps it to /dev/shm/spinlab-lab1
    assert shmem.find("model").get("type") == "ivshmem-plain"
    assert shmem.find("size").text == "16" and shmem.find("size").get("unit") == "M"
    assert shmem.find("address").get("bus") == "0x00"
    args = [a.get("value") for a in d.findall(f"{QEMU_NS}commandline/{QEMU_NS}arg")]
    assert args == ["-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"]
    meta = d.find("metadata/{https://spinlab.invalid/vm/1}vm")
    assert meta.get("name") == "lab1" and meta.get("instance") == "inst123"
    assert d.find("cputune") is None


def test_libvirt_xml_kvm_pinning_and_escaping(tmp_path):
    d = render(tmp_path, accel="kvm", pin=(1, 0), initrd="",
               append="init=/bin/x a<b & 'q' \"d\"")
    assert d.get("type") == "kvm"
    assert d.find("cpu").get("mode") == "host-passthrough"
    feat = d.find("cpu/feature")
    assert feat.get("name") == "arch-capabilities" and feat.get("policy") == "disable"
    assert [(p.get("vcpu"), p.get("cpuset")) for p in d.findall("cputune/vcpupin")] == \
        [("0", "1"), ("1", "0")]
    assert d.find("os/initrd") is None
    assert d.findtext("os/cmdline") == "init=/bin/x a<b & 'q' \"d\""


GOLDEN_BASE = "/run/slvm-golden"   # the state directory's base in the golden files (never created)


@pytest.mark.parametrize("accel, golden, kw", [
    ("tcg", "libvirt-spinlab-tcg.xml", dict(cpus=3, memory_mb=512, shm_size_mb=16)),
    ("kvm", "libvirt-spinlab-kvm.xml", dict(initrd="", pin=(1, 0), append="init=/bin/x a<b & 'q' \"d\"")),
])
def test_libvirt_xml_of_spinlabs_kernel_is_byte_for_byte_the_same(accel, golden, kw):
    """tests/data/libvirt-spinlab-*.xml: the domain XML of spinlab's own kernel as rendered before
    the template learnt the Linux guest's channel and CPU (commit 2bfceb6); it must not change."""
    xml = libvirt.render_xml(config(**kw), accel, Paths("lab1", GOLDEN_BASE), "inst123",
                             emulator="/usr/bin/qemu-system-x86_64")
    assert xml == (Path(__file__).parent / "data" / golden).read_text()


def linux_config(lock, **kw):
    base = dict(name="lx", guest="linux", lock=lock, cpus=2, memory_mb=256, kernel="/k/vmlinux",
                initrd="/k/initramfs.cpio.gz", append="spinlab.workload=hackbench spinlab.seconds=0")
    base.update(kw)
    return VmConfig(**base)


# A Linux guest's lock mode (linux_guest.LOCKS, spinlab_linux.modes) under each accelerator, as the
# domain gives it: <cpu mode>, its <feature>s, the <features> switches, the kernel's own words.
LINUX_CPUS = [
    ("tcg", "mcs", "maximum", [("disable", "hypervisor")], [], ""),        # QEMU: -cpu max,-hypervisor
    ("tcg", "tas", "maximum", [], [], ""),                                 # -cpu max
    ("kvm", "mcs", "host-passthrough", [("disable", "arch-capabilities")], [], " nopvspin"),
    ("kvm", "tas", "host-passthrough", [("disable", "arch-capabilities")], [("pvspinlock", "off")], ""),
    ("kvm", "pvqspin", "host-passthrough", [("disable", "arch-capabilities")], [], ""),
]


@pytest.mark.parametrize("accel, lock, mode, features, switches, words", LINUX_CPUS)
def test_libvirt_xml_of_a_linux_guest(tmp_path, accel, lock, mode, features, switches, words):
    """What linux_guest.adapt_argv gives a Linux guest under QEMU, as libvirt's domain: its kernel
    command line, the lock mode's CPU, the control socket on the agent's virtio-serial port (on a
    virtio-serial controller on the root bus) instead of COM2, no NIC, the same region and COM1."""
    p = Paths("lx", tmp_path)
    d = ET.fromstring(libvirt.render_xml(linux_config(lock), accel, p, "inst123"))
    assert d.get("type") == ("kvm" if accel == "kvm" else "qemu")
    assert d.findtext("os/kernel") == "/k/vmlinux"
    assert d.findtext("os/initrd") == "/k/initramfs.cpio.gz"
    assert d.findtext("os/cmdline") == ("console=ttyS0 panic=-1 loglevel=4 spinlab.region=1 spinlab.stream=0"
                                        + words + " spinlab.workload=hackbench spinlab.seconds=0")
    assert d.find("cpu").get("mode") == mode
    assert [(f.get("policy"), f.get("name")) for f in d.findall("cpu/feature")] == features
    assert [(s.tag, s.get("state")) for s in d.find("features")] == [("acpi", None), ("apic", None), *switches]
    # the control channel: a unix socket the guest's agent serves on its virtio-serial port
    (channel,) = d.findall("devices/channel")
    assert channel.get("type") == "unix"
    assert channel.find("source").get("mode") == "bind"
    assert channel.find("source").get("path") == str(p.control_socket)
    assert channel.find("target").get("type") == "virtio"
    assert channel.find("target").get("name") == "org.spinlab.control" == linux_guest.CONTROL_PORT
    (vser,) = [c for c in d.findall("devices/controller") if c.get("type") == "virtio-serial"]
    assert vser.get("index") == "0"
    assert (vser.find("address").get("bus"), vser.find("address").get("slot")) == ("0x00", "0x06")
    # COM1 only (the console); no NIC; the region as for spinlab's kernel
    serials = d.findall("devices/serial")
    assert [(s.get("type"), s.find("target").get("port")) for s in serials] == [("file", "0")]
    assert serials[0].find("source").get("path") == str(p.console_log)
    assert d.find("devices/interface") is None
    shmem = d.find("devices/shmem")
    assert shmem.get("name") == "spinlab-lx" and shmem.find("model").get("type") == "ivshmem-plain"
    assert (shmem.find("address").get("bus"), shmem.find("address").get("slot")) == ("0x00", "0x05")
    args = [a.get("value") for a in d.findall(f"{QEMU_NS}commandline/{QEMU_NS}arg")]
    assert args == ["-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"]


def test_the_linux_guests_words_and_cpu_come_from_linux_guest(tmp_path):
    """One definition: the domain's command line and CPU are linux_guest's (and so
    spinlab_linux.modes'), whatever they become."""
    cfg = linux_config("mcs")
    d = ET.fromstring(libvirt.render_xml(cfg, "tcg", Paths("lx", tmp_path), "inst123"))
    assert d.findtext("os/cmdline") == linux_guest.kernel_command_line(cfg, "tcg")
    qemu_args, _ = linux_guest.mode_args(cfg, "tcg")
    assert libvirt.cpu_values(qemu_args[qemu_args.index("-cpu") + 1])["cpu_mode"] == d.find("cpu").get("mode")
    with pytest.raises(VmError, match="pvqspin needs KVM"):
        libvirt.render_xml(linux_config("pvqspin"), "tcg", Paths("lx", tmp_path), "inst123")


def test_qemu_cpu_values_in_libvirts_words():
    assert libvirt.cpu_values("max") == {"cpu_mode": "maximum", "cpu_features": "", "feature_switches": ""}
    v = libvirt.cpu_values("host,-arch-capabilities,+x2apic,pdpe1gb=on,kvm-pv-unhalt=off")
    assert v["cpu_mode"] == "host-passthrough"
    assert v["cpu_features"] == ("    <feature policy='disable' name='arch-capabilities'/>\n"
                                 "    <feature policy='require' name='x2apic'/>\n"
                                 "    <feature policy='require' name='pdpe1gb'/>")
    assert v["feature_switches"] == "\n    <pvspinlock state='off'/>"
    with pytest.raises(VmError, match="knows the models max, host"):
        libvirt.cpu_values("qemu64,-hypervisor")
    with pytest.raises(VmError, match="'level=7' is not a switch"):
        libvirt.cpu_values("max,level=7")
