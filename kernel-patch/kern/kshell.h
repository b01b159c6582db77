// kern/kshell.h: a tiny kernel console for `make qemu` until user mode has a shell.
#pragma once
[[noreturn]] void kshell_run();
