// The shared pieces of the progress displays: see progress_line.hpp.
#include "progress_line.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>

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

void CompletionRate::add(double t_done_s) {
  const auto bin = static_cast<std::int64_t>(std::floor(std::max(0.0, t_done_s) / bucket_s_));
  first_bin_ = first_bin_ ? std::min(*first_bin_, bin) : bin;
  // Lines arrive nearly in completion order: find the bin from the back.
  auto it = bins_.end();
  while (it != bins_.begin() && std::prev(it)->first > bin) --it;
  if (it != bins_.begin() && std::prev(it)->first == bin) {
    ++std::prev(it)->second;
  } else {
    bins_.insert(it, {bin, 1});
  }
  const auto keep_from = bins_.back().first - static_cast<std::int64_t>(std::ceil(60.0 / bucket_s_));
  while (!bins_.empty() && bins_.front().first < keep_from) bins_.pop_front();
}

double CompletionRate::rate(double now_s) const {
  if (bins_.empty() && !first_bin_) return 0;
  const auto last = static_cast<std::int64_t>(std::floor((now_s - lag_s_) / bucket_s_));  // exclusive
  // From the first completion on: the time before it (requests under way) is not a rate of zero.
  const auto first = std::max(*first_bin_, last - static_cast<std::int64_t>(std::llround(span_s_ / bucket_s_)));
  if (static_cast<double>(last - first) * bucket_s_ < std::min(1.0, span_s_)) return 0;  // too short to say
  std::int64_t n = 0;
  for (const auto& [bin, count] : bins_) {
    if (bin >= first && bin < last) n += count;
  }
  const double covered = static_cast<double>(last - first) * bucket_s_;
  return covered > 0 ? static_cast<double>(n) / covered : 0;
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
