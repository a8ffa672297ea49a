// requests.jsonl read back into records: one line (record_from_json, parse_record_line), a whole
// file (parse_records_jsonl), and the records of several shards in shard order (MergedRecords),
// read one at a time from their files, or from the store each shard's lines were read into once.
#include "llmload/analysis/artifact_merge.hpp"
#include "json_path.hpp"
#include "jsonl_lines.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <memory>
#include <optional>

#include <fmt/format.h>

namespace llmload::analysis {
namespace {

using nlohmann::json;

ErrorClass error_class_from(std::string_view name) {
  static constexpr ErrorClass kAll[] = {ErrorClass::kNone,
                                        ErrorClass::kConnect,
                                        ErrorClass::kHttpStatus,
                                        ErrorClass::kStreamError,
                                        ErrorClass::kProtocol,
                                        ErrorClass::kTimeout,
                                        ErrorClass::kIdleTimeout,
                                        ErrorClass::kIncomplete,
                                        ErrorClass::kNoOutput,
                                        ErrorClass::kCanceled,
                                        ErrorClass::kConnectTimeout,
                                        ErrorClass::kFirstTokenTimeout,
                                        ErrorClass::kInterTokenTimeout,
                                        ErrorClass::kStoppedEarly,
                                        ErrorClass::kOutputOverflow};
  for (ErrorClass e : kAll) {
    if (to_string(e) == name) return e;
  }
  throw MergeError(fmt::format("unknown error_class '{}'", name));
}

Grade grade_from(std::string_view name) {
  for (Grade g : {Grade::kNone, Grade::kCorrect, Grade::kIncorrect, Grade::kUnparsed}) {
    if (to_string(g) == name) return g;
  }
  throw MergeError(fmt::format("unknown grade '{}' (correct, incorrect, unparsed or none)", name));
}

}  // namespace

RequestRecord record_from_json(const json& j) {
  if (!j.is_object()) throw MergeError("not a JSON object");
  auto need = [&](const char* key) -> const json& {
    auto it = j.find(key);
    if (it == j.end()) throw MergeError(fmt::format("missing \"{}\"", key));
    return *it;
  };
  auto opt_time = [&](const char* key) -> std::optional<Nanos> {
    const json& v = need(key);
    if (v.is_null()) return std::nullopt;
    if (!v.is_number()) throw MergeError(fmt::format("\"{}\" is not a number", key));
    return json_path::from_ms(v.get<double>());
  };
  auto integer = [&](const char* key) -> std::int64_t {
    const json& v = need(key);
    if (!v.is_number_integer()) throw MergeError(fmt::format("\"{}\" is not an integer", key));
    return v.get<std::int64_t>();
  };
  auto boolean = [&](const char* key) -> bool {
    const json& v = need(key);
    if (!v.is_boolean()) throw MergeError(fmt::format("\"{}\" is not true or false", key));
    return v.get<bool>();
  };
  RequestRecord r;
  r.index = static_cast<std::uint64_t>(integer("index"));
  r.warmup = boolean("warmup");
  r.in_window = boolean("in_window");
  const json& ti = need("t_intended_ms");
  if (!ti.is_number()) throw MergeError("\"t_intended_ms\" is not a number");
  r.t_intended = json_path::from_ms(ti.get<double>());
  r.t_send = opt_time("t_send_ms");
  r.t_headers = opt_time("t_headers_ms");
  r.t_first = opt_time("t_first_ms");
  if (const json& v = j.value("t_first_output_ms", json()); v.is_number())
    r.t_first_output = json_path::from_ms(v.get<double>());
  r.t_last = opt_time("t_last_ms");
  r.t_done = opt_time("t_done_ms");
  r.requested_input_tokens = integer("requested_input_tokens");
  r.requested_output_tokens = integer("requested_output_tokens");
  r.input_tokens = integer("input_tokens");
  r.output_tokens = integer("output_tokens");
  r.tokens_from_usage = boolean("tokens_from_usage");
  r.tokens_from_tokenizer = j.value("tokens_from_tokenizer", false);  // absent before --tokenizer
  if (const json& c = j.value("client_output_tokens", json()); c.is_number_integer()) {
    r.client_output_tokens = c.get<std::int64_t>();
  }
  r.output_events = integer("output_events");
  if (const json& c = j.value("cached_tokens", json()); c.is_number_integer()) r.cached_tokens = c.get<std::int64_t>();
  r.reasoning_tokens = j.value("reasoning_tokens", std::int64_t{0});
  r.reasoning_tokens_source = j.value("reasoning_tokens_source", std::string());
  r.model = j.value("model", std::string());
  if (const json& f = j.value("finish_reason", json()); f.is_string()) r.finish_reason = f.get<std::string>();
  r.ended_early = j.value("ended_early", false);
  r.session = j.value("session", std::int64_t{-1});
  r.turn = j.value("turn", std::int64_t{0});
  r.stage = j.value("stage", std::int32_t{-1});
  r.item = j.value("item", r.index);  // absent before issue 18: the item was the index
  if (const json& sv = j.value("server", json()); !sv.is_null()) {
    // The server's own timing of the request (llmload-server's ground truth), when it sent one.
    if (!sv.is_object()) throw MergeError("\"server\" is not an object");
    auto seconds = [&](const char* key) -> std::optional<double> {
      const json& v = sv.value(key, json());
      if (v.is_null()) return std::nullopt;
      if (!v.is_number()) throw MergeError(fmt::format("\"server\".\"{}\" is not a number", key));
      return v.get<double>();
    };
    r.server_queue_s = seconds("queue_s");
    // Written only when the server named its first token: a null one was not a finite number.
    r.server_first_token_s = seconds("first_token_s").value_or(std::numeric_limits<double>::quiet_NaN());
    r.server_last_token_s = seconds("last_token_s");
  }
  r.grader = j.value("grader", std::string());
  if (!r.grader.empty()) r.grade = grade_from(j.value("grade", std::string("none")));
  if (const json& x = j.value("extracted", json()); x.is_string()) r.extracted = x.get<std::string>();
  r.subset = j.value("subset", std::string());
  r.reference = j.value("reference", std::string());
  if (const json& o = j.value("output_text", json()); o.is_string()) r.output_text = o.get<std::string>();
  if (const json& st = j.value("server_tokens", json()); st.is_object()) {
    const std::string from = st.value("from", std::string());
    const json& tokens = st.value("tokens", json());
    if ((from != "token_ids" && from != "logprobs") || !tokens.is_array()) {
      throw MergeError("\"server_tokens\" needs \"from\" (token_ids or logprobs) and a \"tokens\" array");
    }
    for (const auto& t : tokens) {
      if (from == "token_ids" ? !t.is_number_integer() : !t.is_string()) {
        throw MergeError("\"server_tokens\": a token of the wrong type for \"from\": " + from);
      }
      r.server_tokens.push_back(from == "token_ids" ? t.dump() : t.get<std::string>());
    }
    r.server_tokens_from = from;
  }
  r.structured = j.value("structured", std::string());
  if (const json& v = j.value("structured_verdict", json()); v.is_string()) r.structured_verdict = v.get<std::string>();
  r.structured_error = j.value("structured_error", std::string());
  if (const json& calls = j.value("tool_calls", json()); calls.is_array()) {
    for (const auto& c : calls) {
      if (!c.is_object() || !c.value("name", json()).is_string() || !c.value("arguments", json()).is_string()) {
        throw MergeError("\"tool_calls\": each call needs a string \"name\" and \"arguments\"");
      }
      r.tool_call_names.push_back(c["name"].get<std::string>());
      r.tool_call_arguments.push_back(c["arguments"].get<std::string>());
    }
  }
  r.http_status = static_cast<int>(integer("http_status"));
  const json& ec = need("error_class");
  if (!ec.is_string()) throw MergeError("\"error_class\" is not a string");
  r.error = error_class_from(ec.get<std::string>());
  if (const json& e = j.value("error", json()); e.is_string()) r.error_message = e.get<std::string>();
  return r;
}

namespace {

// One pass over a shard's requests.jsonl lines: from its file, a line at a time, or from its lines
// in memory. Blank lines are skipped; a line that is not JSON is a MergeError naming the shard.
class MergeShardLines {
 public:
  explicit MergeShardLines(const ShardArtifact& a) : a_(a) {
    if (a_.records_file.empty()) return;
    try {
      file_.emplace(a_.records_file);
    } catch (const RecordFileError&) {
      throw MergeError(fmt::format("'{}': requests.jsonl cannot be read", a_.name));
    }
  }
  bool next(json& out) {
    if (!file_) {
      if (line_ >= a_.records.size()) return false;
      out = a_.records[line_++];
      return true;
    }
    std::string text;
    bool unterminated = false;  // a shard's last line must be whole too: any line not JSON is an error
    try {
      while (file_->next(text, unterminated)) {
        line_ = file_->line_no();
        if (text.empty()) continue;
        out = json::parse(text, nullptr, false);
        if (out.is_discarded()) {
          throw MergeError(fmt::format("'{}': requests.jsonl line {} is not valid JSON", a_.name, line_));
        }
        return true;
      }
    } catch (const RecordFileError&) {
      throw MergeError(fmt::format("'{}': reading requests.jsonl failed at line {}", a_.name, line_ + 1));
    }
    return false;
  }
  std::size_t line() const { return line_; }

 private:
  const ShardArtifact& a_;
  std::optional<JsonlLineReader> file_;
  std::size_t line_ = 0;
};

// The record of a shard's line just read, or MergeError naming the shard and the line.
RequestRecord shard_record(const ShardArtifact& a, const MergeShardLines& lines, const json& j) {
  try {
    return record_from_json(j);
  } catch (const MergeError& e) {
    throw MergeError(fmt::format("'{}': requests.jsonl line {}: {}", a.name, lines.line(), e.what()));
  }
}

class MergedRecordCursor : public RecordCursor {
 public:
  explicit MergedRecordCursor(const std::vector<const ShardArtifact*>& shards) : shards_(shards) {}
  bool next(RequestRecord& out) override {
    while (k_ < shards_.size()) {
      const ShardArtifact& a = *shards_[k_];
      if (a.loaded) {
        if (!loaded_) loaded_ = a.loaded->open();
        if (loaded_->next(out)) return true;
        loaded_.reset();
        ++k_;
        continue;
      }
      if (!lines_) lines_ = std::make_unique<MergeShardLines>(a);
      json j;
      if (lines_->next(j)) {
        out = shard_record(a, *lines_, j);
        return true;
      }
      lines_.reset();
      ++k_;
    }
    return false;
  }

 private:
  const std::vector<const ShardArtifact*>& shards_;
  std::size_t k_ = 0;
  std::unique_ptr<MergeShardLines> lines_;
  std::unique_ptr<RecordCursor> loaded_;
};

// A loaded shard's lines as they are (each names its shard): blank lines left out, a line's "\r"
// ending dropped.
void copy_shard_lines(const ShardArtifact& a, std::ostream& out) {
  try {
    JsonlLineReader file(a.records_file);
    std::string text;
    bool unterminated = false;
    while (file.next(text, unterminated)) {
      if (!text.empty() && text.back() == '\r') text.pop_back();
      if (!text.empty()) out << text << '\n';
    }
  } catch (const RecordFileError&) {
    throw MergeError(fmt::format("'{}': requests.jsonl cannot be read", a.name));
  }
}

std::int64_t shard_index_of(const ShardArtifact& a) {
  const json& i = json_path::at_path(a.result, "conditions.shard.index");
  return i.is_number_integer() ? i.get<std::int64_t>() : 0;
}

}  // namespace

MergedRecords::MergedRecords(const std::vector<ShardArtifact>& shards) {
  for (const auto& a : shards) shards_.push_back(&a);
  std::stable_sort(shards_.begin(), shards_.end(), [](const ShardArtifact* x, const ShardArtifact* y) {
    return shard_index_of(*x) < shard_index_of(*y);
  });
}

MergedRecords::MergedRecords(std::vector<const ShardArtifact*> in_order) : shards_(std::move(in_order)) {}

void for_each_shard_record(const ShardArtifact& a,
                           const std::function<void(const RequestRecord&, bool names_shard)>& visit) {
  MergeShardLines lines(a);
  json j;
  while (lines.next(j)) {
    const RequestRecord r = shard_record(a, lines, j);
    visit(r, j.is_object() && j.contains("shard"));
  }
}

std::size_t MergedRecords::size() const {
  if (!size_) {
    std::size_t n = 0;
    for (const ShardArtifact* a : shards_) {
      if (a->loaded) {
        n += a->loaded->size();
        continue;
      }
      const std::vector<const ShardArtifact*> one{a};
      MergedRecordCursor cursor(one);
      RequestRecord r;
      while (cursor.next(r)) ++n;
    }
    size_ = n;
  }
  return *size_;
}

std::unique_ptr<RecordCursor> MergedRecords::open() const { return std::make_unique<MergedRecordCursor>(shards_); }

void MergedRecords::write_jsonl(std::ostream& out) const {
  for (const ShardArtifact* a : shards_) {
    if (a->loaded && a->lines_name_shard && !a->records_file.empty()) {
      copy_shard_lines(*a, out);
      continue;
    }
    MergeShardLines lines(*a);
    json line;
    while (lines.next(line)) {
      if (!line.contains("shard")) line["shard"] = shard_index_of(*a);
      out << line.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
    }
  }
}

RecordLine parse_record_line(std::string_view line, std::size_t line_no, bool unterminated, RequestRecord& out) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.find_first_not_of(" \t") == std::string_view::npos) return RecordLine::kBlank;
  const json j = json::parse(line.begin(), line.end(), nullptr, false);
  if (j.is_discarded()) {
    if (unterminated) return RecordLine::kCut;
    throw MergeError(fmt::format("line {} is not valid JSON", line_no));
  }
  try {
    out = record_from_json(j);
  } catch (const MergeError& e) {
    throw MergeError(fmt::format("line {}: {}", line_no, e.what()));
  }
  return RecordLine::kRecord;
}

RecordsFile parse_records_jsonl(std::string_view text) {
  RecordsFile out;
  std::size_t pos = 0;
  std::size_t line_no = 0;
  RequestRecord r;
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    const bool unterminated = nl == std::string_view::npos;
    const std::size_t end = unterminated ? text.size() : nl;
    const std::string_view line = text.substr(pos, end - pos);
    pos = unterminated ? text.size() : nl + 1;
    ++line_no;
    const RecordLine kind = parse_record_line(line, line_no, unterminated, r);
    if (kind == RecordLine::kCut) {
      out.cut_line = line_no;
      break;
    }
    if (kind == RecordLine::kRecord) out.records.push_back(std::move(r));
  }
  return out;
}

}  // namespace llmload::analysis
