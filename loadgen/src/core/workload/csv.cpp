// RFC 4180 CSV records (csv.hpp): a byte-at-a-time reader that counts lines for the errors.

#include "llmload/loadgen/workload/csv.hpp"

#include <fmt/format.h>

#include "llmload/loadgen/config_error.hpp"

namespace llmload {

namespace {

class CsvReader {
 public:
  CsvReader(std::string_view text, const std::string& path) : s_(text), path_(path) {}

  std::vector<CsvRecord> records() {
    std::vector<CsvRecord> out;
    while (i_ < s_.size()) {
      if (at_record_end()) {  // an empty line
        skip_record_end();
        continue;
      }
      CsvRecord rec;
      rec.line = line_;
      read_record(rec.fields);
      out.push_back(std::move(rec));
    }
    return out;
  }

 private:
  // "\n", "\r\n", a '\r' at the very end, or the end itself.
  bool at_record_end() const {
    if (i_ >= s_.size() || s_[i_] == '\n') return true;
    return s_[i_] == '\r' && (i_ + 1 >= s_.size() || s_[i_ + 1] == '\n');
  }
  void skip_record_end() {
    if (i_ < s_.size() && s_[i_] == '\r') ++i_;
    if (i_ < s_.size() && s_[i_] == '\n') {
      ++i_;
      ++line_;
    }
  }

  void read_record(std::vector<std::string>& fields) {
    for (;;) {
      fields.push_back(i_ < s_.size() && s_[i_] == '"' ? quoted_field() : plain_field());
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      skip_record_end();
      return;
    }
  }

  std::string plain_field() {
    const std::size_t start = i_;
    while (i_ < s_.size() && s_[i_] != ',' && !at_record_end()) ++i_;
    return std::string(s_.substr(start, i_ - start));
  }

  std::string quoted_field() {
    const std::int64_t open_line = line_;
    std::string field;
    ++i_;  // the opening quote
    for (;;) {
      if (i_ >= s_.size()) {
        throw ConfigError(fmt::format("{}:{}: a quoted field opened on this line is never closed: end it with a "
                                      "quote (a quote inside a quoted field is written as two quotes, \"\")",
                                      path_, open_line));
      }
      const char c = s_[i_];
      if (c == '"') {
        if (i_ + 1 < s_.size() && s_[i_ + 1] == '"') {
          field += '"';
          i_ += 2;
          continue;
        }
        ++i_;  // the closing quote
        break;
      }
      if (c == '\n') ++line_;
      field += c;
      ++i_;
    }
    if (i_ < s_.size() && s_[i_] != ',' && !at_record_end()) {
      throw ConfigError(fmt::format("{}:{}: text after the closing quote of a field: a quote inside a quoted field "
                                    "is written as two quotes (\"\"), and a field ends at the next comma or line break",
                                    path_, line_));
    }
    return field;
  }

  std::string_view s_;
  const std::string& path_;
  std::size_t i_ = 0;
  std::int64_t line_ = 1;
};

}  // namespace

std::vector<CsvRecord> parse_csv(std::string_view content, const std::string& path) {
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  if (content.substr(0, kBom.size()) == kBom) content.remove_prefix(kBom.size());
  return CsvReader(content, path).records();
}

}  // namespace llmload
