#include "run_journal.hpp"

#include <fcntl.h>

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

RunJournal::RunJournal(std::string dir, const json& in_progress, LineFn line, std::size_t max_pending)
    : dir_(std::move(dir)), line_(std::move(line)), max_pending_(max_pending) {
  if (dir_.empty()) return;
  const std::filesystem::path root(dir_);
  // A result.json of an earlier run in this directory (--overwrite) must never be taken for this
  // run's if this one does not finish.
  std::error_code ec;
  std::filesystem::remove(root / "result.json", ec);
  if (auto e = write_file_atomically(root / kInProgressFile,
                                     in_progress.dump(2, ' ', false, json::error_handler_t::replace) + "\n")) {
    fmt::print(stderr, "llmload: warning: {} not written: {}\n", kInProgressFile, *e);
  }
  errno = 0;
  const int fd = ::open((root / "requests.jsonl").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) {
    fail(errno != 0 ? errno : EIO);
    return;
  }
  BackgroundAppender::Options options;
  options.flush_interval = kJournalFlushInterval;
  options.max_pending = max_pending_;
  file_ = std::make_unique<BackgroundAppender>(fd, options);
}

RunJournal::~RunJournal() { close(); }

void RunJournal::append(const analysis::RequestRecord& r) {
  if (file_ == nullptr || failed_) return;
  std::string text = line_(r);
  text += '\n';
  if (!file_->append(text)) {
    fail(file_->error());
    return;
  }
  ++lines_;
}

void RunJournal::tick() {
  if (file_ != nullptr && file_->error() != 0) fail(file_->error());
}

void RunJournal::close() {
  if (file_ == nullptr) return;
  const int err = file_->close();
  waits_ = file_->waits();
  file_.reset();
  if (waits_ > 0) {
    const std::string behind = max_pending_ >= (std::size_t{1} << 20) ? fmt::format("{} MiB", max_pending_ >> 20)
                                                                        : fmt::format("{} KiB", max_pending_ >> 10);
    fmt::print(stderr,
               "llmload: warning: the disk under {} fell {} behind requests.jsonl {} time(s), and the run waited "
               "for it: result.json's schedule lag says whether any request went out late; write the output to a "
               "faster disk or tmpfs\n",
               dir_, behind, waits_);
  }
  if (err != 0) {
    fail(err);
    return;
  }
  closed_ = !failed_;
}

void RunJournal::finish() {
  close();
  if (dir_.empty()) return;
  std::error_code ec;
  std::filesystem::remove(std::filesystem::path(dir_) / kInProgressFile, ec);
}

void RunJournal::fail(int err) {
  failed_ = true;
  if (warned_) return;
  warned_ = true;
  fmt::print(stderr,
             "llmload: warning: requests.jsonl can no longer be written as the run goes ({}): the run goes on, and "
             "its results are written when it ends\n",
             write_failure_reason(err != 0 ? err : EIO));
}

}  // namespace llmload::app
