// A requests.jsonl read a record at a time: see jsonl_records.hpp.
#include "llmload/analysis/jsonl_records.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include "llmload/analysis/artifact_merge.hpp"
#include "jsonl_lines.hpp"

namespace llmload::analysis {
namespace {

// Yields the records the constructor counted, and no more (a file still growing gives every pass
// the same records).
class JsonlRecordCursor : public RecordCursor {
 public:
  JsonlRecordCursor(const std::string& path, std::size_t count) : path_(path), lines_(path), left_(count) {}
  bool next(RequestRecord& out) override {
    if (left_ == 0) return false;
    bool unterminated = false;
    while (lines_.next(line_, unterminated)) {
      RecordLine kind = RecordLine::kBlank;
      try {
        kind = parse_record_line(line_, lines_.line_no(), unterminated, out);
      } catch (const MergeError& e) {
        // The constructor found every line good: the file was changed since.
        throw RecordFileError(fmt::format("{}: {} (the file changed after it was first read)", path_, e.what()));
      }
      if (kind == RecordLine::kRecord) {
        --left_;
        return true;
      }
      if (kind == RecordLine::kCut) break;
    }
    left_ = 0;
    return false;
  }

 private:
  std::string path_;
  JsonlLineReader lines_;
  std::size_t left_;
  std::string line_;
};

// A pass over the keeper's records: a failure to read them back names the file they came from,
// as bad input (RecordFileError), not as an internal error.
class KeptRecordCursor : public RecordCursor {
 public:
  KeptRecordCursor(const std::string& path, std::unique_ptr<RecordCursor> in) : path_(path), in_(std::move(in)) {}
  bool next(RequestRecord& out) override {
    try {
      return in_->next(out);
    } catch (const RecordFileError&) {
      throw;
    } catch (const std::runtime_error& e) {
      throw RecordFileError(fmt::format("{}: its records, kept once read, cannot be read back ({})", path_, e.what()));
    }
  }

 private:
  std::string path_;
  std::unique_ptr<RecordCursor> in_;
};

}  // namespace

JsonlRecordSource::JsonlRecordSource(std::string path, const RecordKeeperFactory& keep) : path_(std::move(path)) {
  if (keep) kept_ = keep();
  JsonlLineReader lines(path_);
  std::string line;
  bool unterminated = false;
  RequestRecord r;
  while (lines.next(line, unterminated)) {
    const RecordLine kind = parse_record_line(line, lines.line_no(), unterminated, r);
    if (kind == RecordLine::kCut) {
      cut_line_ = lines.line_no();
      break;
    }
    if (kind == RecordLine::kRecord) {
      ++count_;
      if (kept_ != nullptr) {
        kept_->keep(r);
        // A keeper that can no longer keep them as it should (e.g. it would hold them in memory)
        // is let go at once, not filled on: each pass reads the file instead, memory stays flat.
        if (kept_->problem()) kept_.reset();
      }
    }
  }
  if (kept_ != nullptr) {
    kept_->kept_all();
    if (kept_->problem()) kept_.reset();
  }
}

std::unique_ptr<RecordCursor> JsonlRecordSource::open() const {
  if (kept_ != nullptr) return std::make_unique<KeptRecordCursor>(path_, kept_->open());
  return std::make_unique<JsonlRecordCursor>(path_, count_);
}

}  // namespace llmload::analysis
