// kmix: a mixed kernel workload, the analog of the original experiment's load (a build of the
// Windows Research Kernel's source tree): on every CPU, threads that start and reap short-lived
// processes (process table, address space, frame and heap locks), yield and sleep (scheduler lock),
// and map fresh memory (frame allocator). It has no pipes: this kernel has none. Prints what each
// kind of operation achieved.
#include "../lib/ulib.h"

namespace {

uint64_t duration_ms = 3000;
uint64_t per_cpu = 1;
uint64_t map_kib = 64;
const char* mix = "spawn,yield,sleep,map";

struct Counts {
    uint64_t spawns, yields, sleeps, maps, errors;
};
Counts counts[64 * 8];
volatile bool stop;

bool has(const char* kind) {
    size_t n = strlen(kind);
    for (const char* p = mix; *p;) {
        const char* q = p;
        while (*q && *q != ',') q++;
        if (size_t(q - p) == n && memcmp(p, kind, n) == 0) return true;
        p = *q ? q + 1 : q;
    }
    return false;
}

void worker(void* arg) {
    int i = int(uint64_t(arg));
    sys::pin(i % sys::cpu_count());
    Counts& c = counts[i];
    bool spawn = has("spawn"), yield = has("yield"), sleep = has("sleep"), map = has("map");
    const char* argv[] = {"hello", "--exit", "0", nullptr};
    while (!stop) {
        if (spawn) {
            int64_t pid = sys::spawn("/bin/hello", argv);
            int32_t code = -1;
            if (pid > 0 && sys::wait(int(pid), &code) == pid && code == 0) c.spawns++;
            else c.errors++;
        }
        if (yield) {
            sys::yield();
            c.yields++;
        }
        if (sleep) {
            sys::sleep_us(1000);
            c.sleeps++;
        }
        if (map && c.maps < 64) {  // address space grows: cap it per thread
            if (sys::map_anon(map_kib * 1024)) c.maps++;
            else c.errors++;
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    const Opt opts[] = {
        {"--duration-ms", OptKind::kU64, &duration_ms, "how long to run; 0 = until the VM stops (default 3000)"},
        {"--per-cpu", OptKind::kU64, &per_cpu, "threads per CPU (default 1)"},
        {"--mix", OptKind::kString, &mix, "operations: spawn,yield,sleep,map (default all)"},
        {"--map-kib", OptKind::kU64, &map_kib, "KiB per mapping (default 64)"},
    };
    if (!parse_opts(argc, argv, opts, 4, "Mixed kernel workload: spawn/exit, yield, sleep, map on every CPU."))
        return 2;
    int ncpu = sys::cpu_count();
    int n = int(per_cpu) * ncpu;
    if (per_cpu == 0 || n > 64 * 8) {
        eprintf("kmix: --per-cpu %lu: must be 1..%d\n", per_cpu, 64 * 8 / ncpu);
        return 2;
    }
    // The spawned hello would print a line each: keep the console quiet by using --exit only.
    int tids[64 * 8];
    for (int i = 0; i < n; i++) tids[i] = thread_start(worker, reinterpret_cast<void*>(uint64_t(i)));
    if (duration_ms == 0)
        for (;;) sys::sleep_us(1000000);  // until the VM is stopped
    sys::sleep_us(duration_ms * 1000);
    stop = true;
    Counts total{};
    for (int i = 0; i < n; i++) {
        sys::thread_join(tids[i]);
        total.spawns += counts[i].spawns;
        total.yields += counts[i].yields;
        total.sleeps += counts[i].sleeps;
        total.maps += counts[i].maps;
        total.errors += counts[i].errors;
    }
    printf("kmix: %d threads, %lu ms: spawns %lu, yields %lu, sleeps %lu, maps %lu, errors %lu\n", n,
           duration_ms, total.spawns, total.yields, total.sleeps, total.maps, total.errors);
    return total.errors ? 1 : 0;
}
