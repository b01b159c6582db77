// kern/address_space.h: per-process address spaces. Every address space shares the kernel's
// identity map of the low 4 GiB (PML4 slot 0, supervisor-only) and has its own user half from
// spinlab::kUserBase up. The kernel reaches user memory only through the copy functions below,
// which walk the page tables: a bad user pointer is an error status, never a kernel fault, and
// never lands in kernel memory.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "spinlock.h"

struct AddressSpace {
    uint64_t pml4;             // physical (= kernel virtual) address of the top-level table
    Spinlock lock;             // guards the page tables below and map_cursor
    uint64_t map_cursor;       // next address for map_anon
    uint64_t pages;            // user pages mapped
};

AddressSpace* as_create();
void as_destroy(AddressSpace* as);         // frees user pages and tables; must not be active
void as_activate(AddressSpace* as);        // load into CR3 (nullptr: the kernel's own tables)
// Maps zeroed pages over [va, va + len) (page-aligned), user-accessible. false: out of memory
// or already mapped.
bool as_map_zeroed(AddressSpace* as, uint64_t va, uint64_t len, bool writable, bool exec);
uint64_t as_map_anon(AddressSpace* as, uint64_t len);  // 0 on failure
// Maps existing kernel memory [pa, pa + len) (page-aligned) at va. The pages stay the kernel's:
// as_destroy unmaps them without freeing. For the lockstat counters a workload shares.
bool as_map_shared(AddressSpace* as, uint64_t va, uint64_t pa, uint64_t len, bool writable);
// as_map_shared at the next free address (as as_map_anon picks it); 0 on failure.
uint64_t as_map_shared_anywhere(AddressSpace* as, uint64_t pa, uint64_t len, bool writable);

// 0 on success, -spinlab::kErrFault if any byte is outside the user half, unmapped, or (for
// writes) read-only.
int64_t copy_from_user(AddressSpace* as, void* dst, uint64_t src, size_t n);
int64_t copy_to_user(AddressSpace* as, uint64_t dst, const void* src, size_t n);
// copy_from_user for the trace's stack walker, which runs inside lock paths (a spinlock's
// release hook, interrupts off) and so must take no lock, not even as->lock: the same checks,
// on the address space active on this CPU only (-kErrFault otherwise). Its page tables are live
// without the lock: tables are freed only by as_destroy, never while the space is active, and a
// concurrent map only fills entries (either value read is a valid walk).
int64_t copy_from_user_active(AddressSpace* as, void* dst, uint64_t src, size_t n);
// Copies a NUL-terminated string of at most max-1 characters: -kErrFault, or -kErrInval when
// too long.
int64_t copy_string_from_user(AddressSpace* as, char* dst, uint64_t src, size_t max);
// Kernel writes into a fresh address space (the loader); same checks as copy_to_user but
// ignores the write-protect bit.
int64_t as_write(AddressSpace* as, uint64_t dst, const void* src, size_t n);
