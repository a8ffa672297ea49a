// The progress line of `llmload run --workers N`: see worker_progress.hpp.
#include "worker_progress.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

namespace llmload::app {
namespace {

// At most this much of a journal is read per tick (a tick never stalls on a huge backlog).
constexpr std::uint64_t kMaxReadPerTick = 64ull << 20;

}  // namespace

WorkerProgress::WorkerProgress(std::vector<std::string> journals, WorkerProgressOptions options)
    : journals_(std::move(journals)),
      offsets_(journals_.size(), 0),
      partial_(journals_.size()),
      options_(std::move(options)),
      printer_(options_.line, options_.log_interval) {}

WorkerProgress::~WorkerProgress() { finish(); }

void WorkerProgress::start(std::chrono::steady_clock::time_point common_start) { start_ = common_start; }

namespace {

// A record line's completion time in seconds from the run's start (its t_done_ms), if it has one.
std::optional<double> done_at(const std::string& line) {
  static constexpr std::string_view kKey = "\"t_done_ms\":";
  const auto at = line.find(kKey);
  if (at == std::string::npos) return std::nullopt;
  const char* p = line.c_str() + at + kKey.size();
  char* end = nullptr;
  const double ms = std::strtod(p, &end);
  if (end == p) return std::nullopt;  // null
  return ms / 1e3;
}

}  // namespace

void WorkerProgress::read_new(double elapsed) {
  for (std::size_t i = 0; i < journals_.size(); ++i) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(journals_[i], ec);
    if (ec || size <= offsets_[i]) continue;  // not there yet, or replaced by the final file: keep the count
    std::ifstream in(journals_[i], std::ios::binary);
    if (!in) continue;
    in.seekg(static_cast<std::streamoff>(offsets_[i]));
    const std::uint64_t want = std::min<std::uint64_t>(size - offsets_[i], kMaxReadPerTick);
    std::string chunk(want, '\0');
    in.read(chunk.data(), static_cast<std::streamsize>(want));
    chunk.resize(static_cast<std::size_t>(in.gcount()));
    offsets_[i] += chunk.size();
    std::string& line = partial_[i];
    for (char c : chunk) {
      if (c != '\n') {
        line.push_back(c);
        continue;
      }
      ++done_;
      if (line.find("\"ok\":false") != std::string::npos) ++errors_;
      rate_.add(done_at(line).value_or(elapsed));
      line.clear();
    }
  }
}

std::string WorkerProgress::text(double elapsed) const {
  const double rate = rate_.rate(elapsed);
  double eta = std::nan("");
  if (options_.planned_requests && rate > 0) {
    eta = static_cast<double>(std::max<std::int64_t>(*options_.planned_requests - done_, 0)) / rate;
  } else if (options_.planned_duration_s) {
    eta = std::max(0.0, *options_.planned_duration_s - elapsed);
  }
  const std::string done =
      options_.planned_requests ? fmt::format("{}/{}", done_, *options_.planned_requests) : fmt::format("{}", done_);
  return fmt::format("{} workers | done {} | {:.1f} req/s | errors {} | {} elapsed, ETA {}", options_.workers, done,
                     rate, errors_, clock_text(elapsed), clock_text(eta));
}

void WorkerProgress::tick() {
  if (!start_ || !printer_.shows_anything()) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - *start_).count();
  read_new(elapsed);
  printer_.show(text(elapsed), elapsed);
}

void WorkerProgress::finish() { printer_.finish(); }

}  // namespace llmload::app
