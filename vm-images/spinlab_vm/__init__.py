"""spinlab-vm: start, watch and stop spinlab guests (direct QEMU or libvirt).

Modules, each usable alone and tested alone:
  config     the validated description of one VM (VmConfig) and the errors users see (VmError)
  state      the per-VM state directory <run-dir>/vm/NAME/ and vm.json; liveness; stale cleanup
  qmp        a minimal QMP client (greeting, capabilities, one command at a time)
  qemu       the direct-QEMU backend: argv builder, spawn, vCPU threads, stop
  libvirt    the libvirt backend: domain XML from vm-images/libvirt-domain.xml, virsh calls
  reaper     the watchdog `run` leaves behind in case it is SIGKILLed
  supervise  start/run/stop/cleanup orchestration, signals, parent-death handling
  cli        argument parsing and the commands
"""
