// The shared pieces of the progress displays: see progress_line.hpp.
#include "progress_line.hpp"

#include <cmath>
#include <cstdio>

#include <fmt/format.h>

namespace llmload::app {

std::string clock_text(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  const auto t = static_cast<std::int64_t>(seconds + 0.5);
  if (t >= 3600) return fmt::format("{}:{:02}:{:02}", t / 3600, (t / 60) % 60, t % 60);
  return fmt::format("{:02}:{:02}", t / 60, t % 60);
}

void RateWindow::add(double elapsed_s, std::int64_t done) {
  samples_.emplace_back(elapsed_s, done);
  while (samples_.size() > span_ + 1) samples_.pop_front();
}

double RateWindow::rate() const {
  if (samples_.size() < 2) return 0;
  const auto& a = samples_.front();
  const auto& b = samples_.back();
  return b.first > a.first ? static_cast<double>(b.second - a.second) / (b.first - a.first) : 0;
}

void ProgressPrinter::show(const std::string& text, double elapsed_s) {
  if (line_) {
    // \r, the line, then erase to the end of the line (a shorter line leaves no tail).
    fmt::print(stderr, "\r{}\x1b[K", text);
    std::fflush(stderr);
    drawn_ = true;
  } else if (log_interval_ && elapsed_s - last_log_s_ >= std::chrono::duration<double>(*log_interval_).count()) {
    last_log_s_ = elapsed_s;
    fmt::print(stderr, "llmload: progress: {}\n", text);
    std::fflush(stderr);
  }
}

void ProgressPrinter::finish() {
  if (!drawn_) return;
  fmt::print(stderr, "\r\x1b[K");
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace llmload::app
