// experiments/runner/phase.h: the host conditions an experiment compares, and the order in
// which phases and repetitions run.
//
//   idle-host      nothing runs besides the VM
//   host-load      `spinlab-load hog`: one compute-bound process per host CPU (the original
//                  experiment's host load)
//   freeze-Nms     `spinlab-load freeze`: freeze vCPU(s) for N ms every P ms (P: run.freeze-period-ms);
//                  preempt-Nms, its old name, is read as freeze-Nms
//   throttle-P%    `spinlab-load throttle`: each vCPU thread may use P % of one host CPU
//   neighbours-N   N other spinlab guests run beside the measured one ([neighbours]: their
//                  vCPUs, lock, workload and the host CPUs every VM is pinned to; neighbours.h)
//
// Order: time must not be confounded with condition (the host warms up, other jobs come and go,
// the guest's heap fragments). `abba` runs the phases forward in odd repetitions and backward in
// even ones (A B, B A, A B, ...), so every phase sits as often early as late over pairs of
// repetitions. `shuffle` draws a fresh permutation per repetition from a seeded generator
// (SplitMix64, so a seed gives the same order on every machine and library).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace spinlab::run {

enum class PhaseKind { kIdleHost, kHostLoad, kFreeze, kThrottle, kNeighbours };

struct Phase {
    PhaseKind kind = PhaseKind::kIdleHost;
    uint32_t freeze_ms = 0;     // freeze
    uint32_t quota_pct = 0;     // throttle
    uint32_t neighbours = 0;    // neighbours: how many other VMs
    std::string name() const;   // the canonical spelling, also the snapshot file stem
    bool operator==(const Phase&) const = default;
};

// Parses one phase name (an old name too: preempt-Nms is freeze-Nms, whose name() says so).
// Throws std::invalid_argument with a sentence on what is accepted.
Phase parse_phase(const std::string& text);

enum class Order { kAbba, kShuffle };
const char* order_name(Order o);
// "abba" or "shuffle"; throws std::invalid_argument otherwise.
Order parse_order(const std::string& text);

struct Slot {
    uint32_t phase = 0;  // index into the phase list
    uint32_t rep = 1;    // repetition, from 1
    bool operator==(const Slot&) const = default;
};

// Every (phase, repetition) exactly once, repetition by repetition (all phases of repetition 1,
// then of repetition 2, ...), within a repetition in the order chosen.
std::vector<Slot> build_schedule(uint32_t phases, uint32_t repetitions, Order order, uint64_t seed);

}  // namespace spinlab::run
