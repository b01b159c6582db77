// lockstat/log2_table_print.cc: a host tool that prints the log2 wait table with the formatter
// the guest's spinstat uses, for counters given on standard input. It exists so a test can hold
// spinlab-report's table (analysis/) against the guest's for the same snapshot.
//
// Input: per table one line of 67 unsigned integers: acquisitions, uncontended, overflow, then
// the 64 wait buckets. Output: the tables, each followed by an empty line. Exit 2 with a
// message naming the line for malformed input. With --wrk: the original WRK experiment's table
// (format_wrk_table: the buckets and the overflow) instead of the log2 wait table. With
// --contended-only: the wait table of counters that count contended acquisitions only
// (AcquisitionsCounted::kContendedOnly, a Linux guest's).
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "log2_table.h"

namespace {

enum class Form { kWait, kWrk, kContendedOnly };

std::string table(const spinlab::LockClassPerf& c, Form form) {
    using namespace spinlab::lockstat;
    if (form == Form::kWrk) {
        std::string out(format_wrk_table(c.wait_hist, c.wait_overflow, nullptr, 0) + 1, '\0');
        out.resize(format_wrk_table(c.wait_hist, c.wait_overflow, out.data(), out.size()));
        return out;
    }
    const auto counted = form == Form::kContendedOnly ? spinlab::AcquisitionsCounted::kContendedOnly
                                                      : spinlab::AcquisitionsCounted::kEveryAcquisition;
    std::string out(format_wait_table(c, nullptr, 0, counted) + 1, '\0');
    out.resize(format_wait_table(c, out.data(), out.size(), counted));
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    Form form = Form::kWait;
    if (argc == 2 && std::strcmp(argv[1], "--wrk") == 0) form = Form::kWrk;
    else if (argc == 2 && std::strcmp(argv[1], "--contended-only") == 0) form = Form::kContendedOnly;
    else if (argc != 1) {
        std::fprintf(stderr, "usage: log2_table_print [--wrk | --contended-only] < counters\n");
        return 2;
    }
    std::string line;
    int line_no = 0;
    while (std::getline(std::cin, line)) {
        ++line_no;
        std::istringstream in(line);
        std::vector<unsigned long long> v;
        unsigned long long x;
        while (in >> x) v.push_back(x);
        if (!in.eof() || v.size() != 3 + spinlab::kHistBuckets) {
            std::fprintf(stderr, "log2_table_print: line %d: expected %u unsigned integers "
                         "(acquisitions uncontended overflow and %u buckets), got %zu\n",
                         line_no, 3 + spinlab::kHistBuckets, spinlab::kHistBuckets, v.size());
            return 2;
        }
        spinlab::LockClassPerf c{};
        c.acquisitions = v[0];
        c.uncontended = v[1];
        c.wait_overflow = v[2];
        for (unsigned k = 0; k < spinlab::kHistBuckets; ++k) c.wait_hist[k] = v[3 + k];
        std::cout << table(c, form) << "\n";
    }
    return 0;
}
