#pragma once
// A JSONL file read a line at a time (private to analysis): the one line reader behind
// JsonlRecordSource (jsonl_records.cpp) and the merge's shard records (artifact_merge.cpp), which
// differ only in what they accept in a line.

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "llmload/analysis/jsonl_records.hpp"

namespace llmload::analysis {

// One pass over the file's lines: each with its number and whether it ended without a newline
// (only the file's last line can). Throws RecordFileError when the file cannot be opened or a
// read fails.
class JsonlLineReader {
 public:
  explicit JsonlLineReader(const std::string& path) : path_(path), in_(path, std::ios::binary) {
    if (!in_) throw RecordFileError(fmt::format("{}: cannot be read ({})", path_, std::strerror(errno)));
  }
  bool next(std::string& line, bool& unterminated) {
    if (!std::getline(in_, line)) {
      if (in_.bad()) throw RecordFileError(fmt::format("{}: read error after line {}", path_, line_no_));
      return false;
    }
    ++line_no_;
    unterminated = in_.eof();  // getline stopped at the end of the file, not at a newline
    return true;
  }
  std::size_t line_no() const { return line_no_; }

 private:
  std::string path_;
  std::ifstream in_;
  std::size_t line_no_ = 0;
};

}  // namespace llmload::analysis
