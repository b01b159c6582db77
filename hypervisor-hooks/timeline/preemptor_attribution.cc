#include "preemptor_attribution.h"

#include <sstream>

#include "hypervisor-hooks/cleanup/ledger.h"
#include "hypervisor-hooks/common/fs_util.h"

namespace spinlab::load {

Neighbour parse_neighbour(const std::string& text) {
    auto bad = [&](const std::string& why) {
        return LoadError("--neighbour '" + text + "': " + why + " (expected NAME:TID[,TID...], the i-th TID "
                         "that VM's vCPU i)");
    };
    const size_t colon = text.find(':');
    if (colon == std::string::npos) throw bad("no ':'");
    Neighbour n;
    n.name = text.substr(0, colon);
    if (n.name.empty()) throw bad("empty VM name");
    if (n.name.find_first_of(",\"\n\r:") != std::string::npos)
        throw bad("the VM name must not hold a comma, quote, colon or newline (it is a CSV field)");
    std::stringstream tids(text.substr(colon + 1));
    std::string one;
    std::set<int> seen;
    while (std::getline(tids, one, ',')) {
        size_t used = 0;
        long tid = 0;
        try {
            tid = std::stol(one, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (one.empty() || used != one.size() || tid <= 0 || tid > (1L << 30))
            throw bad("'" + one + "' is not a positive TID");
        if (!seen.insert(static_cast<int>(tid)).second) throw bad("TID " + one + " named twice");
        n.vcpu_tids.push_back(static_cast<int>(tid));
    }
    if (n.vcpu_tids.empty() || text.back() == ',') throw bad("no TIDs, or an empty one");
    return n;
}

PreemptorContext preemptor_context(const std::map<int, int>& own_vcpus, const std::vector<Neighbour>& neighbours) {
    PreemptorContext c;
    c.own_vcpus = own_vcpus;
    std::set<std::string> names;
    for (const Neighbour& n : neighbours) {
        if (!names.insert(n.name).second) throw LoadError("--neighbour: VM '" + n.name + "' named twice");
        for (size_t i = 0; i < n.vcpu_tids.size(); ++i) {
            const int tid = n.vcpu_tids[i];
            if (own_vcpus.count(tid))
                throw LoadError("--neighbour " + n.name + ": TID " + std::to_string(tid) +
                                " is one of the traced vCPU threads, not a neighbour's");
            if (!c.neighbours.emplace(tid, std::make_pair(n.name, static_cast<int>(i))).second)
                throw LoadError("--neighbour " + n.name + ": TID " + std::to_string(tid) +
                                " is also another neighbour's");
        }
    }
    return c;
}

std::set<int> ledger_processes(const std::string& state_dir) {
    std::set<int> out;
    std::vector<std::string> names;
    try {
        names = list_directory(state_dir);
    } catch (const LoadError&) {
        return out;
    }
    for (const std::string& name : names) {
        if (name.rfind("spinlab-", 0) != 0 || name.size() < 7 || name.substr(name.size() - 7) != "-ledger") continue;
        std::string text;
        try {
            text = read_file(state_dir + "/" + name);
        } catch (const LoadError&) {
            continue;  // gone meanwhile: its owner exited
        }
        std::stringstream lines(text);
        std::string line;
        while (std::getline(lines, line)) {
            try {
                LedgerEntry e = parse_ledger_entry(line);
                if (e.kind == LedgerEntry::Kind::kProcess && e.id > 0) out.insert(static_cast<int>(e.id));
            } catch (const LoadError&) {
                // a line being written: the next look has it whole
            }
        }
    }
    return out;
}

bool left_blocked(const std::string& reason) {
    // An off interval's reason is the prev_state its switch-out left with ("R", "R+": runnable,
    // preempted; "S", "D", ...: asleep), perf's "R" or "blocked", or "start" / "no-switch" where
    // no switch-out is known (build_run_intervals): those say nothing either way.
    if (reason.empty() || reason == "start" || reason == "no-switch") return false;
    return reason[0] != 'R';
}

void classify_preemptors(std::vector<RunInterval>& intervals, const PreemptorContext& context) {
    using spinlab::PreemptorClass;
    for (RunInterval& r : intervals) {
        r.preemptor_vm.clear();
        r.preemptor_vcpu = -1;
        r.preemptor = PreemptorClass::kPreemptorUnknown;
        if (r.state == RunState::kFrozen) {
            r.preemptor = PreemptorClass::kPreemptorFreeze;
            continue;
        }
        if (r.state != RunState::kOff) continue;
        if (left_blocked(r.reason)) {  // nothing took its CPU: whoever ran next (pid, comm) is no preemptor
            r.preemptor = PreemptorClass::kPreemptorBlocked;
            continue;
        }
        if (r.preemptor_pid < 0) continue;
        const int pid = r.preemptor_pid;
        if (auto own = context.own_vcpus.find(pid); own != context.own_vcpus.end() && pid != r.tid) {
            r.preemptor = PreemptorClass::kPreemptorOwnVcpu;
            r.preemptor_vcpu = own->second;
        } else if (auto n = context.neighbours.find(pid); n != context.neighbours.end()) {
            r.preemptor = PreemptorClass::kPreemptorNeighbourVcpu;
            r.preemptor_vm = n->second.first;
            r.preemptor_vcpu = n->second.second;
        } else if (context.hogs.count(pid)) {
            r.preemptor = PreemptorClass::kPreemptorHog;
        } else {
            r.preemptor = PreemptorClass::kPreemptorHostTask;
        }
    }
}

}  // namespace spinlab::load
