#include "vcpu_state_writer.h"

#include <cerrno>
#include <cstring>

#include "hostlib/error.h"
#include "hypervisor-hooks/common/fs_util.h"

namespace spinlab::load {

namespace {
// A region is a few MiB to a few hundred (trace buffers); more is not a spinlab region.
constexpr uint64_t kMaxRegionBytes = 1ull << 32;

// The header field a region_parse error is about (as the collector names them).
std::string refusal(const std::string& path, RegionError e, const void* base) {
    std::string field;
    switch (e) {
        case RegionError::kBadVersion: {
            RegionHeader h;
            std::memcpy(&h, base, sizeof h);  // once: the number printed is the one judged
            return "the shared region " + path + " has region ABI " + std::to_string(h.abi_version) +
                   ", this spinlab-load writes ABI " + std::to_string(kRegionAbiVersion) +
                   " (a guest kernel without the vCPU state area?)";
        }
        case RegionError::kBadHeaderSize: field = "header_size or section_count"; break;
        case RegionError::kBadRegionSize: field = "region_size"; break;
        case RegionError::kBadCpuCount: field = "cpu_count"; break;
        case RegionError::kBadSection: field = "the section table"; break;
        case RegionError::kBadPerfData: field = "perfdata_version or perfdata_size"; break;
        default: field = "the header"; break;
    }
    return "corrupt shared region " + path + ": region header: " + field + ": " + region_error_name(e);
}
}  // namespace

// The host's one region mapper, read-write, refusing links and anything but a regular file.
static std::unique_ptr<collect::MappedRegion> open_region(const std::string& path) {
    using collect::MappedRegion;
    std::unique_ptr<MappedRegion> m;
    try {
        m = std::make_unique<MappedRegion>(path, MappedRegion::Access::kReadWrite, MappedRegion::Links::kRefuse);
    } catch (const collect::CollectError& e) {
        const bool link = std::string(e.what()).find(std::strerror(ELOOP)) != std::string::npos;
        throw LoadError(std::string("--vcpu-state: ") + e.what() +
                        (link ? " (a symbolic link: give the region file itself, e.g. /dev/shm/spinlab-NAME)" : ""));
    }
    if (m->size() < kRegionPageSize || m->size() > kMaxRegionBytes)
        throw LoadError("--vcpu-state: " + path + " (" + std::to_string(m->size()) +
                        " bytes) cannot be a spinlab shared region");
    return m;
}

const char* vcpu_state_name(VcpuStateWriter::State s) {
    switch (s) {
        case VcpuStateWriter::State::kAttached: return "attached";
        case VcpuStateWriter::State::kWaiting: return "waiting";
        case VcpuStateWriter::State::kRefused: return "refused";
    }
    return "?";
}

VcpuStateWriter::VcpuStateWriter(const std::string& path, uint32_t publisher, uint32_t owned,
                                 const std::vector<uint32_t>& vcpus)
    : mapping_(open_region(path)), publisher_(publisher), owned_(owned & kVcpuOffMask),
      declared_(kVcpuStateEntries, false), bits_(kVcpuStateEntries, 0) {
    for (uint32_t v : vcpus) {
        if (v >= kVcpuStateEntries)
            throw LoadError("--vcpu-state: vCPU " + std::to_string(v) + " has no word in the shared region (" +
                            std::to_string(kVcpuStateEntries) + " words: vCPUs 0.." +
                            std::to_string(kVcpuStateEntries - 1) + ")");
        declared_[v] = true;
    }
}

VcpuStateWriter::~VcpuStateWriter() { detach(); }

void VcpuStateWriter::check_vcpu(uint32_t vcpu) const {
    if (vcpu >= kVcpuStateEntries || !declared_[vcpu])
        throw LoadError("vCPU state: vCPU " + std::to_string(vcpu) + " is not one of this writer's vCPUs" +
                        (vcpu >= kVcpuStateEntries ? " (the shared region has words for vCPUs 0.." +
                                                         std::to_string(kVcpuStateEntries - 1) + ")"
                                                   : ""));
}

VcpuStateWriter::State VcpuStateWriter::refresh() {
    if (detached_) return state_;
    const auto* header = reinterpret_cast<const RegionHeader*>(mapping_->data());
    const uint64_t gen = __atomic_load_n(&header->generation, __ATOMIC_ACQUIRE);
    if (state_ == State::kAttached && gen == layout_.generation) return state_;
    if (state_ == State::kRefused && gen == layout_.generation) return state_;  // judged already
    area_ = nullptr;
    RegionLayout l{};
    const RegionError e = region_parse(mapping_->data(), mapping_->size(), &l);
    if (e == RegionError::kBusy || e == RegionError::kBadMagic) {
        state_ = State::kWaiting;
        why_ = std::string("the guest has not laid out the region (") + region_error_name(e) + ")";
        return state_;
    }
    if (e != RegionError::kNone) {
        state_ = State::kRefused;
        layout_.generation = gen;  // judged once per generation: a new one is parsed again
        why_ = refusal(mapping_->path(), e, mapping_->data());
        return state_;
    }
    // region_parse checked: the section is inside region_size <= the mapping, at least
    // sizeof(VcpuStateArea), aligned, and apart from every other section.
    layout_ = l;
    area_ = reinterpret_cast<VcpuStateArea*>(mapping_->data() + l.section(RegionSection::kVcpuState).offset);
    state_ = State::kAttached;
    why_.clear();
    __atomic_fetch_or(&area_->publishers, publisher_, __ATOMIC_RELEASE);
    // A new layout zeroed the area; a store that raced with it may have survived. Write every
    // word's bits of ours exactly as they are now.
    for (uint32_t v = 0; v < kVcpuStateEntries; ++v)
        if (declared_[v]) write_word(v, bits_[v], /*counted=*/false);
    return state_;
}

void VcpuStateWriter::write_word(uint32_t vcpu, uint32_t bits, bool counted) {
    VcpuStateEntry& e = area_->cpu[vcpu];
    // Set first, then clear: a word going from one "off" reason to another never reads 0 in
    // between. Two read-modify-writes, no compare-and-swap loop: a guest that keeps changing
    // the word cannot keep us here.
    if (bits) __atomic_fetch_or(&e.off, bits, __ATOMIC_RELEASE);
    const uint32_t clear = owned_ & ~bits;
    if (clear) __atomic_fetch_and(&e.off, ~clear, __ATOMIC_RELEASE);
    if (!counted) return;
    __atomic_fetch_add(&e.changes, 1, __ATOMIC_RELAXED);
    ++stores_;
}

bool VcpuStateWriter::set(uint32_t vcpu, uint32_t bits) {
    check_vcpu(vcpu);
    bits &= owned_;
    if (bits_[vcpu] == bits) return false;
    bits_[vcpu] = bits;
    if (state_ != State::kAttached || detached_) return false;
    write_word(vcpu, bits);
    return true;
}

uint32_t VcpuStateWriter::bits(uint32_t vcpu) const {
    check_vcpu(vcpu);
    return bits_[vcpu];
}

void VcpuStateWriter::detach() {
    if (detached_) return;
    detached_ = true;
    if (state_ != State::kAttached) return;
    const auto* header = reinterpret_cast<const RegionHeader*>(mapping_->data());
    // A guest that re-laid the region out since has zeroed our bits already.
    if (__atomic_load_n(&header->generation, __ATOMIC_ACQUIRE) != layout_.generation) return;
    for (uint32_t v = 0; v < kVcpuStateEntries; ++v)
        if (declared_[v] && bits_[v]) write_word(v, 0);
    __atomic_fetch_and(&area_->publishers, ~publisher_, __ATOMIC_RELEASE);
    area_ = nullptr;
}

}  // namespace spinlab::load
