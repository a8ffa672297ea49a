#include "stop_signal.hpp"

#include <csignal>
#include <cstring>
#include <thread>

#include <signal.h>

namespace llmload::app {
namespace {

volatile std::sig_atomic_t g_signal = 0;

extern "C" void record_signal(int sig) { g_signal = sig; }

}  // namespace

void install_stop_handler() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = record_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int stop_signal() { return static_cast<int>(g_signal); }

void note_stop_signal(int sig) { g_signal = sig; }

bool sleep_unless_stopped(std::chrono::nanoseconds d) {
  constexpr auto kSlice = std::chrono::milliseconds(50);
  const auto until = std::chrono::steady_clock::now() + d;
  while (stop_signal() == 0) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) return true;
    std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(until - now, kSlice));
  }
  return false;
}

}  // namespace llmload::app
