// The host's writer of the guest's vCPU state words (kernel-patch/abi/spinlab/vcpu_state.h):
// the region section in which the host says which vCPU threads are off their host CPU, for the
// guest's vcpu_off().
//
// Contract:
//   - The region file (QEMU's memory-backend-file, /dev/shm/spinlab-NAME) is opened and mapped
//     by the host's one region mapper (collector/mapped_region.h), read-write, with
//     Links::kRefuse: O_NOFOLLOW (a symbolic link is refused: give the file itself) and a
//     regular file only; mapped once at the size it had at open. Nothing the guest writes can
//     move or resize that mapping (the guest cannot truncate the host file).
//   - Every address comes from a region_parse of the guest's header (docs/architecture.md, "What
//     the host trusts"): the section is inside the region, the region inside the mapping, and
//     the section does not overlap any other. The header is parsed again only at a new
//     generation (a guest reboot re-lays the region out and zeroes the area); the writer then
//     writes all of its bits again. A header that breaks the rules is refused with a message
//     naming the field (why()), and the writer writes nothing until the next generation parses.
//   - The writer never reads a guest value it acts on: the words are changed with atomic or/and
//     of the bits this writer owns (so two writers, `timeline` and `freeze`, share each word),
//     plus +1 on the entry's `changes` for each change of state.
//   - A vCPU index without a word (>= kVcpuStateEntries) is refused at construction with a
//     LoadError naming it; set() on an index not given there is refused the same way.
//   - detach() (and the destructor) clears this writer's bits and its publisher bit, when the
//     region is still in the generation it last wrote.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "channel/region_header.h"
#include "hostlib/mapped_region.h"

namespace spinlab::load {

class VcpuStateWriter {
public:
    enum class State {
        kAttached,  // the guest's layout is valid: stores land in its vCPU state area
        kWaiting,   // not laid out yet, or being laid out (booting, rebooting)
        kRefused,   // the header breaks a rule or is of another ABI: why() names it
    };

    // `publisher`: this writer's kVcpuStatePublisher* bit; `owned`: the kVcpuOff* bits it keeps;
    // `vcpus`: the vCPU indexes it will write (each below kVcpuStateEntries).
    VcpuStateWriter(const std::string& path, uint32_t publisher, uint32_t owned, const std::vector<uint32_t>& vcpus);
    ~VcpuStateWriter();
    VcpuStateWriter(const VcpuStateWriter&) = delete;
    VcpuStateWriter& operator=(const VcpuStateWriter&) = delete;

    // Follows the guest's layout: one load of the generation when it has not changed; a parse,
    // and all of this writer's bits written again, when it has.
    State refresh();
    State state() const { return state_; }
    // Why the writer is waiting or refused ("" when attached).
    const std::string& why() const { return why_; }

    // `vcpu`'s bits (of the owned ones) are now `bits`. Stores them when attached and they
    // changed; returns whether it stored. Throws LoadError for a vCPU not given at construction.
    bool set(uint32_t vcpu, uint32_t bits);
    // The bits last set for `vcpu` (what the word holds of ours while attached).
    uint32_t bits(uint32_t vcpu) const;

    // Clears our bits and our publisher bit (when still in the generation we wrote); later
    // set()s only record. Idempotent.
    void detach();

    uint64_t stores() const { return stores_; }
    const std::string& path() const { return mapping_->path(); }

private:
    // Our bits of the word exactly `bits`; `counted`: a change of state (+1 on `changes`), not
    // the rewrite of a new layout.
    void write_word(uint32_t vcpu, uint32_t bits, bool counted = true);
    void check_vcpu(uint32_t vcpu) const;

    std::unique_ptr<collect::MappedRegion> mapping_;
    uint32_t publisher_, owned_;
    std::vector<bool> declared_;
    std::vector<uint32_t> bits_;  // per vCPU index: our bits as last set
    RegionLayout layout_{};
    VcpuStateArea* area_ = nullptr;  // inside the mapping, from layout_; null unless attached
    State state_ = State::kWaiting;
    std::string why_ = "not read yet";
    bool detached_ = false;
    uint64_t stores_ = 0;
};

const char* vcpu_state_name(VcpuStateWriter::State s);

}  // namespace spinlab::load
