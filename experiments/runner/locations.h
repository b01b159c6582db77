// experiments/runner/locations.h: where spinlab-run finds the tools it starts and the specs it
// reads. Installed (PREFIX/bin/spinlab-run beside PREFIX/share/spinlab/), everything comes from
// the installation and the source tree is never looked at; in the build tree (build/host/bin/)
// the specs are the source tree's experiments/ and git gives the revision.
#pragma once
#include <string>

namespace spinlab::run {

struct Locations {
    std::string bin_dir;   // the directory holding this executable (spinlab-vm, spinlab-load)
    std::string spec_dir;  // PREFIX/share/spinlab/experiments or <source>/experiments
    std::string source_dir;  // empty when installed
};

// From /proc/self/exe: installed when ../share/spinlab/experiments exists beside bin/.
Locations locate();

// Pure: the installed layout when `installed`, else the source tree's.
Locations locations_for(const std::string& bin_dir, bool installed, const std::string& source_dir);

// --spec VALUE: a path when it names an existing file or holds a '/'; otherwise the name of a spec
// in spec_dir (with or without .ini), or its old name (preempt: freeze). Throws SpecError naming
// the specs there when none matches.
std::string find_spec(const std::string& value, const std::string& spec_dir);

// The revision recorded in meta.json: git's for a source tree, the build's when installed.
std::string build_revision();

}  // namespace spinlab::run
