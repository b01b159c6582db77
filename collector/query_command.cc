// collector/query_command.cc: `query`: one snapshot, printed as table, csv or json. A corrupt
// region is the CollectError(kExitCorrupt) of the snapshot (RegionReader), printed by main().
#include "commands.h"
#include "report_format.h"

namespace spinlab::collect {

int run_query(Session& s, const Config& c, std::ostream& out, std::ostream& err) {
    std::string warning;
    ClassNames names = s.class_names(&warning);
    if (!warning.empty()) err << "spinlab-collect: " << warning << "\n";
    Snapshot snap = s.snapshot();
    QueryView v{&snap, &names, classes_to_show(c, names, snap), c.per_cpu, ""};
    out << format_query(v, parse_format(c.format));
    return 0;
}

}  // namespace spinlab::collect
