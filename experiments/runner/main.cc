// experiments/runner/main.cc: spinlab-run. Everything is in the library (runner.h, spec.h).
#include <iostream>

#include "locations.h"
#include "privilege.h"
#include "runner.h"
#include "spec.h"

int main(int argc, char** argv) {
    using namespace spinlab::run;
    ParsedSpec p;
    const Locations where = locate();
    try {
        p = parse_spec(argc, argv,
                       [&](const std::string& value) { return find_spec(value, where.spec_dir); });
    } catch (const SpecError& e) {
        std::cerr << "spinlab-run: " << e.what() << "\n(spinlab-run --help lists every key)\n";
        return kRunUsage;
    }
    if (p.help) {
        std::cout << usage_text();
        return 0;
    }
    if (p.dry_run) {
        std::cout << describe_plan(p.spec);
        return 0;
    }
    // First of all (no results directory, no VM): a run directory this user may not use.
    if (std::string refused = run_dir_refusal(); !refused.empty()) {
        std::cerr << "spinlab-run: " << refused << "\n";
        return kRunUsage;
    }
    Tools tools;
    try {
        tools = find_tools(where);
    } catch (const SpecError& e) {
        std::cerr << "spinlab-run: " << e.what() << "\n";
        return kRunUsage;
    }
    // Before anything starts (results directory, VM): a phase this user cannot run.
    if (std::string refused = cgroup_refusal(p.spec.run.phases); !refused.empty()) {
        std::cerr << "spinlab-run: " << refused << "\n";
        return kRunUsage;
    }
    return run_experiment(p.spec, tools, std::cout, std::cerr);
}
