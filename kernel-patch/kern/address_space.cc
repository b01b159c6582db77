// kern/address_space.cc: see address_space.h. Four-level paging, 4 KiB user pages.
#include "address_space.h"

#include "../arch/x86.h"
#include "../lib/user_range.h"
#include "console.h"
#include "mem.h"

extern "C" uint64_t boot_pml4[512];

namespace {

constexpr uint64_t kPresent = 1, kWrite = 2, kUser = 4, kNoExec = 1ull << 63;
constexpr uint64_t kShared = 1ull << 9;  // available-to-software bit: the page is not ours to free
constexpr uint64_t kAddrMask = 0x000ffffffffff000ull;
constexpr uint64_t kPage = 4096;

uint64_t* table(uint64_t entry) { return reinterpret_cast<uint64_t*>(entry & kAddrMask); }

int index(uint64_t va, int level) { return int((va >> (12 + 9 * level)) & 511); }

// The leaf entry for va, creating the intermediate tables when create is set.
// as->lock must be held.
uint64_t* walk(AddressSpace* as, uint64_t va, bool create) {
    uint64_t* t = reinterpret_cast<uint64_t*>(as->pml4);
    for (int level = 3; level > 0; level--) {
        uint64_t& e = t[index(va, level)];
        if (!(e & kPresent)) {
            if (!create) return nullptr;
            uint64_t p = page_alloc();
            if (!p) return nullptr;
            e = p | kPresent | kWrite | kUser;  // permissions are decided at the leaf
        }
        t = table(e);
    }
    return &t[index(va, 0)];
}

void free_level(uint64_t* t, int level) {
    for (int i = 0; i < 512; i++) {
        if (!(t[i] & kPresent)) continue;
        if (level > 0) free_level(table(t[i]), level - 1);
        if (level == 0 && (t[i] & kShared)) continue;  // the kernel's page, lent
        page_free(t[i] & kAddrMask);
    }
}

// Walks [va, va + n) a page at a time, handing fn the kernel address of each piece.
template <class Fn>
int64_t for_each_piece_locked(AddressSpace* as, uint64_t va, size_t n, bool write, bool check_wp, Fn fn) {
    size_t done = 0;
    while (done < n) {
        uint64_t a = va + done;
        uint64_t* e = walk(as, a, false);
        if (!e || !(*e & kPresent) || !(*e & kUser)) return -spinlab::kErrFault;
        if (write && check_wp && !(*e & kWrite)) return -spinlab::kErrFault;
        size_t chunk = kPage - (a & (kPage - 1));
        if (chunk > n - done) chunk = n - done;
        fn(reinterpret_cast<uint8_t*>((*e & kAddrMask) | (a & (kPage - 1))), done, chunk);
        done += chunk;
    }
    return 0;
}

template <class Fn>
int64_t for_each_piece(AddressSpace* as, uint64_t va, size_t n, bool write, bool check_wp, Fn fn) {
    if (n == 0) return 0;
    if (!user_range_ok(va, n)) return -spinlab::kErrFault;
    SpinGuardIrq g(&as->lock);
    return for_each_piece_locked(as, va, n, write, check_wp, fn);
}

}  // namespace

AddressSpace* as_create() {
    uint64_t pml4 = page_alloc();
    if (!pml4) return nullptr;
    auto* as = new AddressSpace{};
    as->pml4 = pml4;
    spin_init(&as->lock, "address_space");
    as->map_cursor = spinlab::kUserMapBase;
    // The kernel half: slot 0 (identity map of 4 GiB, supervisor-only), shared by all.
    reinterpret_cast<uint64_t*>(pml4)[0] = boot_pml4[0];
    return as;
}

void as_destroy(AddressSpace* as) {
    auto* t = reinterpret_cast<uint64_t*>(as->pml4);
    for (int i = 1; i < 512; i++) {
        if (!(t[i] & kPresent)) continue;
        free_level(table(t[i]), 2);
        page_free(t[i] & kAddrMask);
    }
    page_free(as->pml4);
    delete as;
}

void as_activate(AddressSpace* as) {
    uint64_t want = as ? as->pml4 : uint64_t(boot_pml4);
    if (arch::read_cr3() != want) arch::write_cr3(want);
}

bool as_map_zeroed(AddressSpace* as, uint64_t va, uint64_t len, bool writable, bool exec) {
    if ((va | len) & (kPage - 1) || !user_range_ok(va, len)) return false;
    SpinGuardIrq g(&as->lock);
    for (uint64_t a = va; a < va + len; a += kPage) {
        uint64_t* e = walk(as, a, true);
        if (!e || (*e & kPresent)) return false;
        uint64_t p = page_alloc();
        if (!p) return false;
        *e = p | kPresent | kUser | (writable ? kWrite : 0) | (exec ? 0 : kNoExec);
        as->pages++;
    }
    return true;
}

bool as_map_shared(AddressSpace* as, uint64_t va, uint64_t pa, uint64_t len, bool writable) {
    if ((va | pa | len) & (kPage - 1) || !user_range_ok(va, len)) return false;
    SpinGuardIrq g(&as->lock);
    for (uint64_t off = 0; off < len; off += kPage) {
        uint64_t* e = walk(as, va + off, true);
        if (!e || (*e & kPresent)) return false;
        *e = (pa + off) | kPresent | kUser | kShared | kNoExec | (writable ? kWrite : 0);
    }
    return true;
}

uint64_t as_map_anon(AddressSpace* as, uint64_t len) {
    if (len == 0 || len > (1ull << 32)) return 0;
    len = (len + kPage - 1) & ~(kPage - 1);
    uint64_t va;
    {
        SpinGuardIrq g(&as->lock);
        va = as->map_cursor;
        as->map_cursor += len + kPage;  // an unmapped guard page between mappings
    }
    return as_map_zeroed(as, va, len, true, false) ? va : 0;
}

uint64_t as_map_shared_anywhere(AddressSpace* as, uint64_t pa, uint64_t len, bool writable) {
    if (len == 0 || len > (1ull << 32) || (len & (kPage - 1))) return 0;
    uint64_t va;
    {
        SpinGuardIrq g(&as->lock);
        va = as->map_cursor;
        as->map_cursor += len + kPage;  // a guard page, as as_map_anon leaves
    }
    return as_map_shared(as, va, pa, len, writable) ? va : 0;
}

int64_t copy_from_user(AddressSpace* as, void* dst, uint64_t src, size_t n) {
    auto* d = static_cast<uint8_t*>(dst);
    return for_each_piece(as, src, n, false, true,
                          [&](uint8_t* k, size_t off, size_t len) { __builtin_memcpy(d + off, k, len); });
}

int64_t copy_from_user_active(AddressSpace* as, void* dst, uint64_t src, size_t n) {
    if (n == 0) return 0;
    if (!user_range_ok(src, n) || arch::read_cr3() != as->pml4) return -spinlab::kErrFault;
    auto* d = static_cast<uint8_t*>(dst);
    return for_each_piece_locked(as, src, n, false, true,
                                 [&](uint8_t* k, size_t off, size_t len) { __builtin_memcpy(d + off, k, len); });
}

int64_t copy_to_user(AddressSpace* as, uint64_t dst, const void* src, size_t n) {
    auto* s = static_cast<const uint8_t*>(src);
    return for_each_piece(as, dst, n, true, true,
                          [&](uint8_t* k, size_t off, size_t len) { __builtin_memcpy(k, s + off, len); });
}

int64_t as_write(AddressSpace* as, uint64_t dst, const void* src, size_t n) {
    auto* s = static_cast<const uint8_t*>(src);
    return for_each_piece(as, dst, n, true, false,
                          [&](uint8_t* k, size_t off, size_t len) { __builtin_memcpy(k, s + off, len); });
}

int64_t copy_string_from_user(AddressSpace* as, char* dst, uint64_t src, size_t max) {
    for (size_t i = 0; i < max; i++) {
        char c;
        int64_t r = copy_from_user(as, &c, src + i, 1);
        if (r) return r;
        dst[i] = c;
        if (c == '\0') return 0;
    }
    return -spinlab::kErrInval;
}
