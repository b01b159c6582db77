// experiments/runner/signals.h: SIGINT, SIGTERM and SIGHUP end a run in order rather than
// killing it: the handler only records the signal, and every wait of the runner checks it, so
// the children are stopped and status.json says what was kept.
#pragma once
#include <string>

namespace spinlab::run {

// Records SIGINT/SIGTERM/SIGHUP instead of dying; ignores SIGPIPE.
void install_signal_handlers();
// From here on SIGINT/SIGTERM/SIGHUP are ignored (while the runner tears down).
void ignore_signals();
// The signal received since install_signal_handlers(), or 0.
int pending_signal();
// "SIGTERM".
std::string signal_name(int s);

}  // namespace spinlab::run
