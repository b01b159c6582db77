"""spinlab's Linux guest: Debian's own kernel under QEMU, with a probe on the spinlock slow path.

Modules, each usable alone:
  paths      where things live: the repository, build/linux/, the guest sources
  fetch      Debian packages into build/linux/ (kernel via linux-image-amd64, busybox-static,
             workload packages), never installed on the host; writes kernel.json
  initramfs  the agent (gcc -static) and the initramfs (busybox, /init, virtio modules, the
             workloads and their libraries) as a deterministic cpio.gz
  modes      lock modes (native, tas, pv) and accelerators -> QEMU and kernel arguments
  records    the agent's stream format: the checked reader, waits, per-CPU log2 histograms
  boot       one guest run: QEMU started and always stopped, the stream read and checked, the
             vCPU thread ids, the outputs (summary.json, waits.csv)
  cli        `spinlab-linux fetch | initramfs | run | check`

The stream format and the agent are described in vm-images/linux/README.md.
"""
