#include "run_journal.hpp"

#include <cerrno>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "file_write.hpp"
#include "llmload/analysis/record_line.hpp"

namespace llmload::app {

using nlohmann::json;

std::string request_line(const analysis::RequestRecord& r, const ScenarioConfig& local, const ShardPlan& plan) {
  if (!local.shard.sharded()) return analysis::record_line(r);
  const analysis::ExtraLineField shard[] = {{"shard", static_cast<std::int64_t>(local.shard.index)},
                                            {"global_index", static_cast<std::int64_t>(plan.global(r.index))}};
  return analysis::record_line(r, shard);
}

RunJournal::RunJournal(std::string dir, const json& in_progress, LineFn line, bool quiet)
    : dir_(std::move(dir)), line_(std::move(line)), quiet_(quiet), last_flush_(std::chrono::steady_clock::now()) {
  if (dir_.empty()) return;
  const std::filesystem::path root(dir_);
  // A result.json of an earlier run in this directory (--overwrite) must never be taken for this
  // run's if this one does not finish.
  std::error_code ec;
  std::filesystem::remove(root / "result.json", ec);
  if (auto e = write_file_atomically(root / kInProgressFile,
                                     in_progress.dump(2, ' ', false, json::error_handler_t::replace) + "\n")) {
    if (!quiet_) fmt::print(stderr, "llmload: warning: {} not written: {}\n", kInProgressFile, *e);
  }
  errno = 0;
  file_ = std::fopen((root / "requests.jsonl").c_str(), "w");
  if (file_ == nullptr) fail(errno != 0 ? errno : EIO);
}

RunJournal::~RunJournal() { close(); }

void RunJournal::append(const analysis::RequestRecord& r) {
  if (file_ == nullptr) return;
  const std::string text = line_(r) + "\n";
  errno = 0;
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size()) {
    fail(errno != 0 ? errno : EIO);
    return;
  }
  ++lines_;
  flush_if_due();
}

void RunJournal::flush_if_due() {
  if (file_ == nullptr) return;
  if (std::chrono::steady_clock::now() - last_flush_ >= kJournalFlushInterval) flush();
}

void RunJournal::flush() {
  last_flush_ = std::chrono::steady_clock::now();
  errno = 0;
  if (std::fflush(file_) != 0) fail(errno != 0 ? errno : EIO);
}

void RunJournal::close() {
  if (file_ == nullptr) return;
  flush();
  if (file_ != nullptr) {
    errno = 0;
    const int closed = std::fclose(file_);
    file_ = nullptr;
    if (closed != 0) {
      fail(errno != 0 ? errno : EIO);
      return;
    }
    closed_ = true;
  }
}

void RunJournal::finish() {
  close();
  if (dir_.empty()) return;
  std::error_code ec;
  std::filesystem::remove(std::filesystem::path(dir_) / kInProgressFile, ec);
}

void RunJournal::fail(int err) {
  if (!quiet_) {
    fmt::print(stderr,
               "llmload: warning: requests.jsonl can no longer be written as the run goes ({}): the run goes on, and "
               "its results are written when it ends\n",
               write_failure_reason(err));
  }
  if (file_ != nullptr) std::fclose(file_);
  file_ = nullptr;
  failed_ = true;
}

}  // namespace llmload::app
