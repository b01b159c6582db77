// experiments/runner/signals.cc: see signals.h.
#include "signals.h"

#include <signal.h>
#include <string.h>

#include <csignal>

namespace spinlab::run {
namespace {

volatile std::sig_atomic_t g_signal = 0;

void on_signal(int s) { g_signal = s; }

}  // namespace

void install_signal_handlers() {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaction(s, &sa, nullptr);
    signal(SIGPIPE, SIG_IGN);
}

void ignore_signals() {
    for (int s : {SIGINT, SIGTERM, SIGHUP}) signal(s, SIG_IGN);
}

int pending_signal() { return g_signal; }

std::string signal_name(int s) {
    const char* n = sigabbrev_np(s);
    return std::string("SIG") + (n ? n : std::to_string(s).c_str());
}

}  // namespace spinlab::run
