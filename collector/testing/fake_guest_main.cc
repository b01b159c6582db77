// collector/testing/fake_guest_main.cc: spinlab-fake-guest, a stand-in for a running guest
// (see fake_guest.h) that spinlab-collect can attach to with --socket and --shm.
#include <boost/program_options.hpp>
#include <csignal>
#include <fstream>
#include <iostream>
#include <thread>

#include "fake_guest.h"

namespace po = boost::program_options;
using spinlab::LockAlgorithm;

namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

// The ABI's lock= names (spinlab/sysinfo.h's table), "tas|ticket|...".
const auto kAlgorithms = spinlab::join_names<spinlab::joined_size(spinlab::kLockAlgorithmNames)>(
    spinlab::kLockAlgorithmNames, '|');

LockAlgorithm parse_algorithm(const std::string& s) {
    for (uint32_t a = 0; a < spinlab::kLockAlgorithmCount; ++a)
        if (s == lock_algorithm_name(LockAlgorithm(a))) return LockAlgorithm(a);
    throw std::runtime_error("--algorithm must be one of " + std::string(kAlgorithms.text) + ", not '" + s + "'");
}

}  // namespace

int main(int argc, char** argv) {
    spinlab::testing::FakeGuestOptions o;
    std::string algorithm, count_file;
    po::options_description paths("Where (what spinlab-collect attaches to)");
    paths.add_options()
        ("help,h", "print this help")
        ("socket", po::value(&o.socket_path)->required(), "UNIX socket to serve the channel on")
        ("shm", po::value(&o.shm_path)->required(), "shared region file to create");
    po::options_description load("Workload");
    load.add_options()
        ("cpus", po::value(&o.cpus)->default_value(2), "worker threads, one per fake CPU")
        ("locks", po::value(&o.locks)->default_value(2), "locks (and lock classes) they share")
        ("algorithm", po::value(&algorithm)->default_value("tas"),
         (std::string("the lock algorithm: ") + kAlgorithms.text).c_str())
        ("critical-cycles", po::value(&o.critical_cycles)->default_value(200), "TSC cycles held")
        ("think-cycles", po::value(&o.think_cycles)->default_value(200), "TSC cycles between")
        ("run-ms", po::value(&o.run_ms)->default_value(0),
         "stop the workers after this long and keep serving (0: run until killed)")
        ("count-file", po::value(&count_file),
         "when the workers stop, write their exact acquisition count here")
        ("publish-us", po::value(&o.publish_us)->default_value(1000),
         "clock publication period (0: never publish)");
    po::options_description all;
    all.add(paths).add(load);
    po::variables_map vm;
    try {
        po::store(po::parse_command_line(argc, argv, all), vm);
        if (vm.count("help")) {
            std::cout << "spinlab-fake-guest: serve the spinlab channel and shared region from "
                         "host threads hammering instrumented locks.\n\n"
                      << all
                      << "\nEXAMPLES\n"
                         "  spinlab-fake-guest --socket /tmp/g.sock --shm /dev/shm/spinlab-fake\n"
                         "  spinlab-fake-guest --socket /tmp/g.sock --shm /tmp/g.shm --cpus 8 "
                         "--algorithm ticket --run-ms 2000 --count-file /tmp/g.count\n";
            return 0;
        }
        po::notify(vm);
        o.algorithm = parse_algorithm(algorithm);
        std::signal(SIGINT, on_signal);
        std::signal(SIGTERM, on_signal);
        spinlab::testing::FakeGuest guest(o);
        std::cout << "ready" << std::endl;
        bool written = false;
        while (!g_stop) {
            if (!written && !count_file.empty() && guest.quiescent()) {
                // Write then rename: a reader never sees a half-written count.
                std::string tmp = count_file + ".tmp";
                std::ofstream(tmp) << guest.acquisitions() << "\n";
                std::rename(tmp.c_str(), count_file.c_str());
                written = true;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "spinlab-fake-guest: " << e.what() << "\n";
        return 2;
    }
}
