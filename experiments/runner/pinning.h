// experiments/runner/pinning.h: where the VMs of a run go ([neighbours] host-cpus), and each
// neighbour VM's spec. Pure: the runner (neighbours.h), spinlab_vm_argv (vm.h) and meta.json
// (meta.h) read the one plan.
//
// Plan: the VMs in order (the measured VM, then neighbour 1, 2, ...), their vCPUs in index
// order, each on the next host CPU of neighbours.host-cpus, round robin. With 2 host CPUs and
// VMs of 2 vCPUs every VM's vCPU i is on host CPU i. A neighbour's place depends only on its
// number, so neighbour 1 sits on the same host CPUs in neighbours-1 as in neighbours-3.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "spec.h"

namespace spinlab::run {

// For VMs of these vCPU counts (in order): the host CPU of each vCPU. Empty lists when
// host_cpus is empty (nothing pinned).
std::vector<std::vector<uint32_t>> pin_plan(const std::vector<uint32_t>& vm_vcpus,
                                            const std::vector<uint32_t>& host_cpus);

// vCPUs of each neighbour: neighbours.cpus, else vm.cpus.
uint32_t neighbour_vcpus(const Spec& s);
// The largest N of the spec's neighbours-N phases; 0 without one.
uint32_t max_neighbours(const Spec& s);
// The host CPU of each vCPU of VM k (0: the measured VM, k >= 1: neighbour k): vm.pin for the
// measured VM when given, else the plan's; empty: not pinned.
std::vector<uint32_t> vm_pin(const Spec& s, uint32_t k);
// All VMs' vCPUs over the host CPUs they may run on, with n neighbours: `host_cpus` host CPUs
// (neighbours.host-cpus, or all online host CPUs when nothing is pinned).
double overcommit(const Spec& s, uint32_t n, uint32_t host_cpus);

// Neighbour k's VM name: "<measured VM's name>-n<k>".
std::string neighbour_name(const std::string& measured, uint32_t k);

// The spec of neighbour k (from 1), named `name`: [vm] and [workload] as the measured VM's
// with [neighbours] applied (vCPUs, memory, lock, workload, pinning); no trace session, no
// clock samples, no attach.
Spec neighbour_spec(const Spec& s, uint32_t k, const std::string& name);

}  // namespace spinlab::run
