// user/lib/ulib.cc: see ulib.h.
#include "ulib.h"

#include "lib/format.h"
#include "lib/heap_alloc.h"

namespace {

const char* g_prog = "?";
ULock heap_lock;
HeapAllocator heap;    // heap_lock must be held
bool heap_ready;
constexpr size_t kHeapBytes = 4 << 20;

int vprint(int fd, const char* fmt, va_list ap) {
    char buf[512];
    int n = vformat(buf, sizeof buf, fmt, ap);
    sys::write(fd, buf, n < int(sizeof buf) ? size_t(n) : sizeof buf - 1);
    return n;
}

struct ThreadStart {
    void (*fn)(void*);
    void* arg;
};

void thread_trampoline(void* p) {
    ThreadStart s = *static_cast<ThreadStart*>(p);
    free(p);
    s.fn(s.arg);
    sys::thread_exit(0);
}

}  // namespace

extern "C" [[noreturn]] void ulib_start(int argc, char** argv) {
    if (argc > 0) {
        g_prog = argv[0];
        for (const char* p = argv[0]; *p; p++)
            if (*p == '/') g_prog = p + 1;
    }
    sys::exit(main(argc, argv));
}

extern "C" void* memset(void* d, int c, size_t n) {
    auto* p = static_cast<uint8_t*>(d);
    for (size_t i = 0; i < n; i++) p[i] = uint8_t(c);
    return d;
}
extern "C" void* memcpy(void* d, const void* s, size_t n) {
    auto* p = static_cast<uint8_t*>(d);
    auto* q = static_cast<const uint8_t*>(s);
    for (size_t i = 0; i < n; i++) p[i] = q[i];
    return d;
}
extern "C" void* memmove(void* d, const void* s, size_t n) {
    auto* p = static_cast<uint8_t*>(d);
    auto* q = static_cast<const uint8_t*>(s);
    if (p < q) return memcpy(d, s, n);
    while (n--) p[n] = q[n];
    return d;
}
extern "C" int memcmp(const void* a, const void* b, size_t n) {
    auto* x = static_cast<const uint8_t*>(a);
    auto* y = static_cast<const uint8_t*>(b);
    for (size_t i = 0; i < n; i++)
        if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
    return 0;
}

int printf(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vprint(1, fmt, ap);
    va_end(ap);
    return n;
}

int eprintf(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vprint(2, fmt, ap);
    va_end(ap);
    return n;
}

void puts_raw(const char* s) { sys::write(1, s, strlen(s)); }

size_t strlen(const char* s) {
    size_t n = 0;
    while (s[n]) n++;
    return n;
}

int strcmp(const char* a, const char* b) {
    while (*a && *a == *b) a++, b++;
    return (unsigned char)*a - (unsigned char)*b;
}

bool starts_with(const char* s, const char* prefix) {
    while (*prefix)
        if (*s++ != *prefix++) return false;
    return true;
}

bool parse_u64(const char* s, uint64_t* out) {
    uint64_t v = 0;
    unsigned base = 10;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s += 2;
    }
    if (!*s) return false;
    for (; *s; s++) {
        unsigned d;
        if (*s >= '0' && *s <= '9') d = unsigned(*s - '0');
        else if (base == 16 && *s >= 'a' && *s <= 'f') d = unsigned(*s - 'a' + 10);
        else if (base == 16 && *s >= 'A' && *s <= 'F') d = unsigned(*s - 'A' + 10);
        else return false;
        if (v > (~0ull - d) / base) return false;
        v = v * base + d;
    }
    *out = v;
    return true;
}

const char* prog_name() { return g_prog; }

void ULock::lock() {
    while (__atomic_exchange_n(&word, 1u, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(&word, __ATOMIC_RELAXED)) asm volatile("pause");
}
void ULock::unlock() { __atomic_store_n(&word, 0u, __ATOMIC_RELEASE); }

void* malloc(size_t n) {
    heap_lock.lock();
    if (!heap_ready) {
        void* region = sys::map_anon(kHeapBytes);
        if (region) heap.init(region, kHeapBytes);
        heap_ready = region != nullptr;
    }
    void* p = heap_ready ? heap.alloc(n) : nullptr;
    heap_lock.unlock();
    return p;
}

void free(void* p) {
    if (!p) return;
    heap_lock.lock();
    HeapAllocator::FreeResult r = heap.free(p);
    heap_lock.unlock();
    if (r != HeapAllocator::FreeResult::kOk) {
        eprintf("%s: free(%p): heap damaged or double free\n", g_prog, p);
        sys::exit(134);
    }
}

int thread_start(void (*fn)(void*), void* arg, size_t stack_size) {
    auto* stack = static_cast<uint8_t*>(sys::map_anon(stack_size));
    auto* s = static_cast<ThreadStart*>(malloc(sizeof(ThreadStart)));
    if (!stack || !s) return -int(spinlab::kErrNoMem);
    *s = {fn, arg};
    return int(sys::thread_create(thread_trampoline, s, stack + stack_size));
}

void print_usage(const Opt* opts, int n, const char* summary) {
    eprintf("usage: %s [options]\n%s\noptions:\n", g_prog, summary);
    for (int i = 0; i < n; i++) {
        eprintf("  %-18s %s", opts[i].name, opts[i].help);
        if (opts[i].kind == OptKind::kChoice) eprintf(" (one of %s)", opts[i].choices);
        eprintf("\n");
    }
}

bool is_choice(const char* choices, const char* word) {
    const size_t len = strlen(word);
    for (const char* c = choices; *c;) {
        size_t k = 0;
        while (c[k] && c[k] != '|') k++;
        if (k == len && memcmp(c, word, len) == 0) return true;
        c += c[k] ? k + 1 : k;
    }
    return false;
}

namespace {

// Stores the value `v` that option `o` was given; false (and says why) when its row refuses it.
bool set_opt_value(const Opt& o, const char* v) {
    if (o.kind == OptKind::kString) {
        *static_cast<const char**>(o.value) = v;
        return true;
    }
    if (o.kind == OptKind::kChoice) {
        if (!is_choice(o.choices, v)) {
            eprintf("%s: option '%s': '%s' is not one of %s\n", g_prog, o.name, v, o.choices);
            return false;
        }
        *static_cast<const char**>(o.value) = v;
        return true;
    }
    uint64_t x;
    if (!parse_u64(v, &x)) {
        eprintf("%s: option '%s': '%s' is not a number\n", g_prog, o.name, v);
        return false;
    }
    if (x < o.min || x > o.max) {
        eprintf("%s: option '%s': %lu is outside %lu..%lu\n", g_prog, o.name, x, o.min, o.max);
        return false;
    }
    *static_cast<uint64_t*>(o.value) = x;
    return true;
}

}  // namespace

bool parse_opts(int argc, char** argv, const Opt* opts, int n, const char* summary,
                int* first_positional) {
    int i = 1;
    for (; i < argc; i++) {
        const char* a = argv[i];
        if (!starts_with(a, "--")) break;
        if (strcmp(a, "--help") == 0) {
            print_usage(opts, n, summary);
            return false;
        }
        size_t klen = 0;
        while (a[klen] && a[klen] != '=') klen++;
        const Opt* o = nullptr;
        for (int k = 0; k < n; k++)
            if (strlen(opts[k].name) == klen && memcmp(opts[k].name, a, klen) == 0) o = &opts[k];
        if (!o) {
            eprintf("%s: unknown option '%s' (try --help)\n", g_prog, a);
            return false;
        }
        if (o->kind == OptKind::kFlag) {
            if (a[klen]) {
                eprintf("%s: option '%.*s' takes no value\n", g_prog, int(klen), a);
                return false;
            }
            *static_cast<bool*>(o->value) = true;
            continue;
        }
        const char* v = a[klen] ? a + klen + 1 : (i + 1 < argc ? argv[++i] : nullptr);
        if (!v) {
            eprintf("%s: option '%s' needs a value\n", g_prog, o->name);
            return false;
        }
        if (!set_opt_value(*o, v)) return false;
    }
    if (first_positional) *first_positional = i;
    else if (i < argc) {
        eprintf("%s: unexpected argument '%s' (try --help)\n", g_prog, argv[i]);
        return false;
    }
    return true;
}
