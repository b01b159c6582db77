// kern/channel_device.h: the host's control channel: syscall-shaped requests arrive on COM2 (a QEMU
// chardev socket on the host), the shared channel server (channel/channel_server.h) decodes
// them and hands each to the same system-information handler the system calls use.
#pragma once
#include <stdint.h>

#include "spinlab/channel.h"

// Boot CPU, after sysinfo_init: program COM2, route its interrupt, start the server thread.
// Requests go to sysinfo_query / sysinfo_set (kern/sysinfo_glue.h), the handler the system
// calls use; the host side is privileged (it owns the VM).
void channel_init();
void channel_rx_interrupt();   // from the trap handler (COM2's vector)
