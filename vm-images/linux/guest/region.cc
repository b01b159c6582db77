// vm-images/linux/guest/region.cc: see region.h.
#include "region.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utility>

#include "channel/clock_area.h"
#include "channel/region_header.h"
#include "lockstat/perf_record.h"

namespace {

uint8_t* base;
uint64_t mapped;
spinlab::RegionLayout layout;
// Per CPU: its reader thread's records and the channel's resets of its block never interleave.
pthread_mutex_t cpu_locks[spinlab::kRegionMaxCpus];

// The first PCI device that is ivshmem (Red Hat's 1af4:1110), its BAR 2 file in `out`.
bool find_ivshmem(char* out, size_t n) {
    DIR* d = opendir("/sys/bus/pci/devices");
    if (!d) return false;
    bool found = false;
    while (dirent* e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        char path[300], vendor[16] = "", device[16] = "";
        for (auto [file, buf] : {std::pair{"vendor", vendor}, std::pair{"device", device}}) {
            snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/%s", e->d_name, file);
            if (FILE* f = fopen(path, "r")) {
                if (!fgets(buf, 16, f)) buf[0] = 0;
                fclose(f);
            }
        }
        if (!strncmp(vendor, "0x1af4", 6) && !strncmp(device, "0x1110", 6)) {
            snprintf(out, n, "/sys/bus/pci/devices/%s/resource2", e->d_name);
            found = true;
            break;
        }
    }
    closedir(d);
    return found;
}

spinlab::CpuPerfData* cpu_block(int cpu) {
    if (!base || cpu < 0 || uint32_t(cpu) >= layout.cpu_count) return nullptr;
    return const_cast<spinlab::CpuPerfData*>(spinlab::region_cpu(base, layout, uint32_t(cpu)));
}

}  // namespace

extern "C" int region_open(int ncpus, uint64_t tsc_hz, char* why, size_t why_size) {
    char path[320];
    if (!find_ivshmem(path, sizeof path)) {
        snprintf(why, why_size, "no ivshmem device (PCI 1af4:1110) in /sys/bus/pci/devices");
        return -1;
    }
    // resource2, not resource2_wc: write-combining could reorder the seqcount's stores.
    int fd = open(path, O_RDWR | O_SYNC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(why, why_size, "cannot open %s: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    void* p = mmap(nullptr, size_t(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        snprintf(why, why_size, "cannot map %s (%lld bytes): %s", path, (long long)st.st_size,
                 strerror(errno));
        return -1;
    }
    uint32_t a, d;
    asm volatile("lfence; rdtsc" : "=a"(a), "=d"(d));
    spinlab::RegionError e = spinlab::region_layout(p, uint64_t(st.st_size), uint32_t(ncpus), tsc_hz,
                                                    (uint64_t(d) << 32) | a);
    if (e == spinlab::RegionError::kNone) e = spinlab::region_parse(p, uint64_t(st.st_size), &layout);
    if (e != spinlab::RegionError::kNone) {
        snprintf(why, why_size, "%s (%lld bytes) cannot hold the region for %d CPUs: %s", path,
                 (long long)st.st_size, ncpus, spinlab::region_error_name(e));
        munmap(p, size_t(st.st_size));
        return -1;
    }
    base = static_cast<uint8_t*>(p);
    mapped = uint64_t(st.st_size);
    for (auto& m : cpu_locks) pthread_mutex_init(&m, nullptr);
    // The probe sees slow-path waits only: every acquisition counted here waited, and first-try
    // wins are never seen, so the block says its counts are of contended acquisitions only.
    for (int cpu = 0; cpu < ncpus; cpu++)
        spinlab::lockstat::init_cpu_perf(*cpu_block(cpu), uint32_t(cpu), 1,
                                         spinlab::AcquisitionsCounted::kContendedOnly);
    return 0;
}

extern "C" void region_set_apic_id(int cpu, uint32_t apic_id) {
    if (spinlab::CpuPerfData* p = cpu_block(cpu)) __atomic_store_n(&p->apic_id, apic_id, __ATOMIC_RELAXED);
}

extern "C" void region_record_wait(int cpu, uint64_t start, uint64_t end) {
    spinlab::CpuPerfData* p = cpu_block(cpu);
    if (!p) return;
    pthread_mutex_lock(&cpu_locks[cpu]);
    spinlab::lockstat::record_wait(p->classes[0], start, end, spinlab::LhpClass::kUnknown);
    pthread_mutex_unlock(&cpu_locks[cpu]);
}

extern "C" void region_reset(int cpu, uint32_t lock_class) {
    spinlab::CpuPerfData* p = cpu_block(cpu);
    if (!p) return;
    pthread_mutex_lock(&cpu_locks[cpu]);
    spinlab::lockstat::reset_cpu_perf(*p, lock_class);
    pthread_mutex_unlock(&cpu_locks[cpu]);
}

extern "C" void* region_cpu_perf(int cpu) { return cpu_block(cpu); }

extern "C" void* region_channel_stats(void) {
    return base ? base + layout.section(spinlab::RegionSection::kChannelStats).offset : nullptr;
}

extern "C" void* region_trace(uint64_t* size) {
    if (!base) {
        *size = 0;
        return nullptr;
    }
    const spinlab::RegionSectionEntry& s = layout.section(spinlab::RegionSection::kTrace);
    *size = s.size;
    return s.size ? base + s.offset : nullptr;
}

extern "C" int region_cpus(void) { return base ? int(layout.cpu_count) : 0; }

extern "C" void region_clock_publish(uint64_t guest_tsc, uint32_t cpu, uint32_t period_us) {
    if (!base) return;
    auto* area = reinterpret_cast<spinlab::ClockArea*>(base + layout.section(spinlab::RegionSection::kClock).offset);
    spinlab::clock_publish(area, guest_tsc, cpu, period_us);
}

extern "C" uint64_t region_size(void) { return base ? layout.region_size : 0; }
extern "C" uint64_t region_generation(void) { return base ? layout.generation : 0; }
