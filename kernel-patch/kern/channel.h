// kern/channel.h: the host's control channel: syscall-shaped requests arrive on COM2 (a QEMU
// chardev socket on the host), the shared channel server (channel/channel_server.h) decodes
// them and hands each to the same system-information handler the system calls use.
#pragma once
#include <stdint.h>

#include "spinlab/channel.h"

// The handler both paths share: query (op kQuery) or set (kSet) system information over a
// kernel buffer. Returns the NTSTATUS; *return_length as NtQuerySystemInformation does.
using ChannelSysinfoFn = uint32_t (*)(spinlab::FrameOp op, uint32_t info_class, uint8_t* buffer,
                                      uint32_t length, uint32_t* return_length);

// Boot CPU, after ioapic_init and sched_init: program COM2, route its interrupt, start the
// server thread. The host side is privileged (it owns the VM).
void channel_init(ChannelSysinfoFn handler);
void channel_rx_interrupt();   // from the trap handler (COM2's vector)
