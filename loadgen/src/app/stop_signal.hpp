#pragma once
// SIGINT and SIGTERM outside a load: during the prompt calibration, the --start-at wait, the
// pause between trials and the gap between sweep points. The handler only records the signal;
// the command stops at its next boundary, writes what it measured (the trials or sweep summary
// included) and exits 130. During a load drive() handles the signals itself (drain within
// --drain-timeout, a second signal aborts) and records them here too, so the phases after the
// load see them.

#include <chrono>
#include <exception>

namespace llmload::app {

/// Installs the recording handler for SIGINT and SIGTERM. Called again after each load: Asio's
/// signal_set puts the default action back when it is done.
void install_stop_handler();

/// The signal received so far (0: none).
int stop_signal();

/// Records a signal received elsewhere (drive's handler).
void note_stop_signal(int sig);

/// Sleeps for `d`, returning early when a signal arrives; false when a signal stopped it (or had
/// arrived before).
bool sleep_unless_stopped(std::chrono::nanoseconds d);

/// Thrown where a phase that cannot return a partial result (a capacity search's calibration)
/// was stopped by a signal; the command catches it and exits 130.
class StopRequested : public std::exception {
 public:
  const char* what() const noexcept override { return "stopped by a signal"; }
};

}  // namespace llmload::app
