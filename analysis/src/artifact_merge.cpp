#include "llmload/analysis/artifact_merge.hpp"
#include "jsonl_lines.hpp"
#include "numeric.hpp"
#include "llmload/common/duration.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <map>
#include <limits>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "llmload/analysis/report.hpp"
#include "llmload/analysis/slo.hpp"
#include "llmload/analysis/stats.hpp"

namespace llmload::analysis {
namespace {

using nlohmann::json;


// Conditions every shard of one run shares: a difference is an error.
constexpr const char* kMustMatch[] = {
    "conditions.scenario",          "conditions.seeds",         "conditions.endpoint",
    "conditions.model",             "conditions.workload",      "conditions.prompts.method",
    "conditions.prompts.overhead_tokens", "conditions.prompts.vocabulary_words", "conditions.tool.name",
    "conditions.tool.version",      "conditions.definitions",   "conditions.shard.count",
    "conditions.shard.start_at",    "conditions.shard.rule",    "validity.checked",
    "slo.spec",                     "slo.view",                 "validity.max_error_rate",
    "minimums.percentiles",         "minimums.min_duration_s",  "minimums.min_requests",
    "minimums.max_duration_s",
};

std::string brief(const json& j) {
  std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 160) s = s.substr(0, 157) + "...";
  return s;
}

// The value at a dotted path; null when any part is missing.
const json& at_path(const json& j, std::string_view path) {
  static const json kNull;
  const json* cur = &j;
  std::size_t pos = 0;
  while (pos <= path.size()) {
    const std::size_t dot = std::min(path.find('.', pos), path.size());
    const std::string key(path.substr(pos, dot - pos));
    if (!cur->is_object()) return kNull;
    auto it = cur->find(key);
    if (it == cur->end()) return kNull;
    cur = &*it;
    pos = dot + 1;
  }
  return *cur;
}

// The first path at which a and b differ, with both values there; nullopt when equal.
struct Difference {
  std::string path;
  json a;
  json b;
};
std::optional<Difference> first_difference(const json& a, const json& b, const std::string& path) {
  if (a.is_object() && b.is_object()) {
    std::set<std::string> keys;
    for (const auto& [k, v] : a.items()) keys.insert(k);
    for (const auto& [k, v] : b.items()) keys.insert(k);
    for (const auto& k : keys) {
      const json va = a.contains(k) ? a[k] : json("(missing)");
      const json vb = b.contains(k) ? b[k] : json("(missing)");
      if (auto d = first_difference(va, vb, path + "." + k)) return d;
    }
    return std::nullopt;
  }
  if (a.is_array() && b.is_array() && a.size() == b.size()) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (auto d = first_difference(a[i], b[i], fmt::format("{}[{}]", path, i))) return d;
    }
    return std::nullopt;
  }
  // Numbers compare by value (a JSON round trip may turn 10.0 into 10).
  if (a.is_number() && b.is_number() && a.get<double>() == b.get<double>()) return std::nullopt;
  if (a == b) return std::nullopt;
  return Difference{path, a, b};
}

double number_or(const json& j, double fallback) { return j.is_number() ? j.get<double>() : fallback; }

Nanos from_ms(double ms) { return Nanos(static_cast<std::int64_t>(std::llround(ms * 1e6))); }
Nanos from_s(double s) { return Nanos(static_cast<std::int64_t>(std::llround(s * 1e9))); }

ErrorClass error_class_from(std::string_view name) {
  static constexpr ErrorClass kAll[] = {ErrorClass::kNone,        ErrorClass::kConnect,          ErrorClass::kHttpStatus,
                                        ErrorClass::kStreamError, ErrorClass::kProtocol,         ErrorClass::kTimeout,
                                        ErrorClass::kIdleTimeout, ErrorClass::kIncomplete,       ErrorClass::kNoOutput,
                                        ErrorClass::kCanceled,    ErrorClass::kConnectTimeout,   ErrorClass::kFirstTokenTimeout,
                                        ErrorClass::kInterTokenTimeout, ErrorClass::kStoppedEarly,
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

// Where each metric's summary lives in result.json.
const json& stats_of(const json& result, Metric m) {
  switch (m) {
    case Metric::kTtftRt: return at_path(result, "response_time.ttft");
    case Metric::kE2eRt: return at_path(result, "response_time.e2e");
    case Metric::kTtfoRt: return at_path(result, "response_time.ttfo");
    case Metric::kScheduleLag: return at_path(result, "schedule_lag");
    default: return at_path(result, "latency." + std::string(metric_name(m)));
  }
}


// The p-verdict of one bounded metric with the merged histogram (run_metrics.cpp's rule: PASS iff
// n >= h(t) + t; FAIL when more than (1 - p) of n exceed; else INCONCLUSIVE).
void rejudge(MetricVerdict& v, const HdrHistogram& h, double percentile) {
  v.observed_us = h.total_count() > 0 ? h.value_at_percentile(percentile) : 0;
  const double p = percentile / 100.0;
  const double bound_ms = static_cast<double>(v.bound.count()) / 1e6;
  const double observed_ms = static_cast<double>(v.observed_us) / 1e3;
  if (v.n > 0 && v.n >= v.required) {
    v.verdict = Verdict::kPass;
    v.explanation = fmt::format("p{:g} within {:g} ms with 99% confidence ({} of {} over the bound)", percentile,
                                bound_ms, v.exceedances, v.n);
  } else if (v.n > 0 && static_cast<double>(v.exceedances) > (1.0 - p) * static_cast<double>(v.n)) {
    v.verdict = Verdict::kFail;
    v.explanation = fmt::format("{} of {} requests ({:.2f}%) over {:g} ms: p{:g} exceeds the bound (observed {:.1f} ms)",
                                v.exceedances, v.n, 100.0 * static_cast<double>(v.exceedances) / static_cast<double>(v.n),
                                bound_ms, percentile, observed_ms);
  } else {
    v.verdict = Verdict::kInconclusive;
    v.explanation = fmt::format("too few requests to confirm p{:g} <= {:g} ms: {} of {} over the bound; "
                                "would need about {} more requests",
                                percentile, bound_ms, v.exceedances, v.n, std::max<std::int64_t>(0, v.required - v.n));
  }
}

struct Shard {
  const ShardArtifact* artifact = nullptr;
  std::int64_t index = 0;
  std::size_t count = 0;  // its records
  bool measured = false;  // issued at least one measured request (its window is meaningful)
};

// Checks that the artifacts are the complete, consistent set of one run; returns them by index.
std::vector<Shard> check_shards(const std::vector<ShardArtifact>& artifacts) {
  if (artifacts.empty()) throw MergeError("nothing to merge: give the directories of every shard of one run");
  std::vector<Shard> shards;
  std::int64_t count = -1;
  std::string count_from;
  std::map<std::int64_t, std::string> seen;
  for (const auto& a : artifacts) {
    if (!a.result.is_object()) throw MergeError(fmt::format("'{}': result.json is not a JSON object", a.name));
    const json& sh = at_path(a.result, "conditions.shard");
    if (!sh.is_object() || !sh.value("index", json()).is_number_integer() ||
        !sh.value("count", json()).is_number_integer()) {
      throw MergeError(fmt::format("'{}' is not a shard artifact: its result.json has no conditions.shard (it was not "
                                   "run with --shard-count N); merge the directories written by the shards of one run",
                                   a.name));
    }
    const auto idx = sh["index"].get<std::int64_t>();
    const auto n = sh["count"].get<std::int64_t>();
    if (count < 0) {
      count = n;
      count_from = a.name;
    } else if (n != count) {
      throw MergeError(fmt::format("'{}' is a shard of {} but '{}' a shard of {}: merge only the shards of one run",
                                   a.name, n, count_from, count));
    }
    if (n < 1 || idx < 0 || idx >= n) {
      throw MergeError(fmt::format("'{}': conditions.shard says shard {} of {}, which does not exist", a.name, idx, n));
    }
    if (auto it = seen.find(idx); it != seen.end()) {
      throw MergeError(fmt::format("'{}' and '{}' are both shard {} of {}: give each shard's directory once", it->second,
                                   a.name, idx, n));
    }
    seen.emplace(idx, a.name);
    shards.push_back(Shard{&a, idx, 0, false});
  }
  std::vector<std::string> missing;
  for (std::int64_t i = 0; i < count; ++i) {
    if (!seen.count(i)) missing.push_back(std::to_string(i));
  }
  if (!missing.empty()) {
    throw MergeError(fmt::format("shard{} {} of {} {} missing: pass the directory of every shard of the run (each shard "
                                 "writes its own; a shard that failed must be run again)",
                                 missing.size() > 1 ? "s" : "", fmt::join(missing, ", "), count,
                                 missing.size() > 1 ? "are" : "is"));
  }
  std::sort(shards.begin(), shards.end(), [](const Shard& x, const Shard& y) { return x.index < y.index; });
  const json& ref = shards.front().artifact->result;
  for (const auto& s : shards) {
    for (const char* field : kMustMatch) {
      if (auto d = first_difference(at_path(ref, field), at_path(s.artifact->result, field), field)) {
        throw MergeError(fmt::format("shards disagree on {}: shard {} ('{}') has {}, shard {} ('{}') has {}; merge only "
                                     "the shards of one run (the same flags with --shard-index 0..{} and one "
                                     "--start-at)",
                                     d->path, shards.front().index, shards.front().artifact->name, brief(d->a), s.index,
                                     s.artifact->name, brief(d->b), count - 1));
      }
    }
  }
  return shards;
}

// Reads the records of a shard.
// Reads the records of a shard once: counts them and checks every line.
void load_records(Shard& s) {
  const MergedRecords one(std::vector<const ShardArtifact*>{s.artifact});
  for (const auto& r : RecordRange(one)) {
    ++s.count;
    if (!r.warmup) s.measured = true;
  }
  const json& issued = at_path(s.artifact->result, "requests.issued");
  if (issued.is_number_integer() && issued.get<std::int64_t>() != static_cast<std::int64_t>(s.count)) {
    throw MergeError(fmt::format("'{}': requests.jsonl has {} records but result.json counts {} requests: the artifact "
                                 "is incomplete (was it copied while being written?)",
                                 s.artifact->name, s.count, issued.get<std::int64_t>()));
  }
}

// TTFO (issue 19) came after the other tags: a shard written before it has none, which is an
// empty histogram (its records have no t_first_output either).
bool optional_tag(Metric m) { return m == Metric::kTtfo || m == Metric::kTtfoRt; }

const HdrHistogram& shard_histogram(const Shard& s, Metric m) {
  for (const auto& in : s.artifact->hlog.intervals) {
    if (in.tag && *in.tag == metric_name(m)) return in.histogram;
  }
  static const HdrHistogram kEmpty(1, kHighestUs, 3);
  if (optional_tag(m)) return kEmpty;
  throw MergeError(fmt::format("'{}': latency.hlog has no '{}' histogram: the artifact is incomplete or from another "
                               "version of llmload",
                               s.artifact->name, metric_name(m)));
}

std::int64_t int_at(const json& j, std::string_view path) {
  const json& v = at_path(j, path);
  return v.is_number() ? v.get<std::int64_t>() : 0;
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
    return from_ms(v.get<double>());
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
  r.t_intended = from_ms(ti.get<double>());
  r.t_send = opt_time("t_send_ms");
  r.t_headers = opt_time("t_headers_ms");
  r.t_first = opt_time("t_first_ms");
  if (const json& v = j.value("t_first_output_ms", json()); v.is_number()) r.t_first_output = from_ms(v.get<double>());
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

class MergedRecordCursor : public RecordCursor {
 public:
  explicit MergedRecordCursor(const std::vector<const ShardArtifact*>& shards) : shards_(shards) {}
  bool next(RequestRecord& out) override {
    while (k_ < shards_.size()) {
      if (!lines_) lines_ = std::make_unique<MergeShardLines>(*shards_[k_]);
      json j;
      if (lines_->next(j)) {
        try {
          out = record_from_json(j);
        } catch (const MergeError& e) {
          throw MergeError(fmt::format("'{}': requests.jsonl line {}: {}", shards_[k_]->name, lines_->line(), e.what()));
        }
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
};

std::int64_t shard_index_of(const ShardArtifact& a) {
  const json& i = at_path(a.result, "conditions.shard.index");
  return i.is_number_integer() ? i.get<std::int64_t>() : 0;
}

}  // namespace

MergedRecords::MergedRecords(const std::vector<ShardArtifact>& shards) {
  for (const auto& a : shards) shards_.push_back(&a);
  std::stable_sort(shards_.begin(), shards_.end(),
                   [](const ShardArtifact* x, const ShardArtifact* y) { return shard_index_of(*x) < shard_index_of(*y); });
}

MergedRecords::MergedRecords(std::vector<const ShardArtifact*> in_order) : shards_(std::move(in_order)) {}

std::size_t MergedRecords::size() const {
  if (!size_) {
    std::size_t n = 0;
    MergedRecordCursor cursor(shards_);
    RequestRecord r;
    while (cursor.next(r)) ++n;
    size_ = n;
  }
  return *size_;
}

std::unique_ptr<RecordCursor> MergedRecords::open() const { return std::make_unique<MergedRecordCursor>(shards_); }

void MergedRecords::write_jsonl(std::ostream& out) const {
  for (const ShardArtifact* a : shards_) {
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

MergedArtifact merge_artifacts(const std::vector<ShardArtifact>& artifacts) {
  std::vector<Shard> shards = check_shards(artifacts);
  for (auto& s : shards) load_records(s);
  const json& ref = shards.front().artifact->result;
  const auto n_shards = static_cast<std::int64_t>(shards.size());

  // Histograms, added exactly; means and SDs pooled from each shard's exact moments.
  std::map<Metric, HdrHistogram> hist;
  std::map<Metric, LatencyStats> latency;
  for (Metric m : kAllMetrics) {
    HdrHistogram h(1, kHighestUs, 3);
    double n = 0;
    double sum = 0;
    for (const auto& s : shards) {
      const HdrHistogram& part = shard_histogram(s, m);
      if (h.add(part) != 0) {
        throw MergeError(fmt::format("'{}': the '{}' histogram holds values above one hour, beyond llmload's histograms",
                                     s.artifact->name, metric_name(m)));
      }
      const json& st = stats_of(s.artifact->result, m);
      const double c = number_or(at_path(st, "count"), 0);
      n += c;
      sum += c * number_or(at_path(st, "mean_ms"), 0) * 1e3;
    }
    const double mean = n > 0 ? sum / n : 0;
    double m2 = 0;
    for (const auto& s : shards) {
      const json& st = stats_of(s.artifact->result, m);
      const double c = number_or(at_path(st, "count"), 0);
      const double mu = number_or(at_path(st, "mean_ms"), 0) * 1e3;
      const double sd = number_or(at_path(st, "std_ms"), 0) * 1e3;
      m2 += c * (sd * sd + (mu - mean) * (mu - mean));
    }
    latency.emplace(m, summarize_latency(h, mean, n > 0 ? std::sqrt(m2 / n) : 0, n));
    hist.emplace(m, std::move(h));
  }

  // The window: every shard's, as offsets from the common start.
  Window window;
  bool any_window = false;
  for (const auto& s : shards) {
    if (!s.measured) continue;
    const Nanos ws = from_s(number_or(at_path(s.artifact->result, "window.start_s"), 0));
    const Nanos we = from_s(number_or(at_path(s.artifact->result, "window.end_s"), 0));
    window.start = any_window ? std::min(window.start, ws) : ws;
    window.end = any_window ? std::max(window.end, we) : we;
    any_window = true;
  }
  window.method = any_window ? "the shards' windows together: from the earliest shard's window start to the latest "
                               "shard's end (offsets from the common start)"
                             : "no measured request was issued";
  if (window.end < window.start) window.end = window.start;

  // Counts, errors, throughput, achieved load and SLO attainment: the single-run rules over all
  // records (an accumulator without samples: its latency parts are replaced below).
  std::vector<const ShardArtifact*> in_order;
  for (const auto& s : shards) in_order.push_back(s.artifact);
  const MergedRecords all(in_order);
  const bool open_loop = at_path(ref, "validity.checked").is_boolean() && at_path(ref, "validity.checked").get<bool>();
  std::optional<SloSpec> slo;
  LatencyView view = LatencyView::kService;
  if (const json& spec = at_path(ref, "slo.spec"); spec.is_string()) {
    try {
      slo = parse_slo(spec.get<std::string>());
    } catch (const SloParseError& e) {
      throw MergeError(fmt::format("'{}': slo.spec '{}' cannot be read: {}", shards.front().artifact->name,
                                   spec.get<std::string>(), e.what()));
    }
    view = at_path(ref, "slo.view") == "response" ? LatencyView::kResponse : LatencyView::kService;
  }
  // The merged run is judged as one run: the validity settings the shards ran with (the same in
  // every shard: one command line), now with the sample checks and minimums a shard leaves to it.
  ValidityOptions validity;
  validity.max_error_rate = number_or(at_path(ref, "validity.max_error_rate"), validity.max_error_rate);
  if (const json& ps = at_path(ref, "minimums.percentiles"); ps.is_array()) {
    for (const auto& p : ps) {
      if (p.is_number()) validity.percentiles.push_back(p.get<double>());
    }
  }
  if (const json& v = at_path(ref, "minimums.min_duration_s"); v.is_number()) validity.min_duration = from_s(v.get<double>());
  if (const json& v = at_path(ref, "minimums.min_requests"); v.is_number_integer()) {
    validity.min_requests = v.get<std::int64_t>();
  }
  if (const json& v = at_path(ref, "minimums.max_duration_s"); v.is_number()) validity.max_duration = from_s(v.get<double>());
  for (const auto& s : shards) {
    if (at_path(s.artifact->result, "minimums.max_duration_reached") == true) validity.max_duration_reached = true;
  }
  validity.check_samples = true;
  RunMetrics m = MetricsAccumulator().finalize(window, open_loop, slo, view, RecordRange(all), validity);
  m.latency = latency;
  m.histograms = hist;
  // Output tokens: each shard counted those arriving in its own window (which lies in the merged one).
  m.output_tokens_in_window = 0;
  for (const auto& s : shards) {
    m.output_tokens_in_window += number_or(at_path(s.artifact->result, "tokens.output_tokens_arriving_in_window"), 0);
  }
  const double len = to_seconds(window.length());
  if (len > 0) {
    m.output_throughput = m.output_tokens_in_window / len;
    m.total_token_throughput += m.output_tokens_in_window / len;  // finalize() counted the input tokens only
  }
  if (m.slo) {
    const bool rt = m.slo->view == LatencyView::kResponse;
    for (auto& v : m.slo->metrics) {
      const Metric hm = v.metric == "tpot"   ? Metric::kTpot
                        : v.metric == "ttft" ? (rt ? Metric::kTtftRt : Metric::kTtft)
                        : v.metric == "ttfo" ? (rt ? Metric::kTtfoRt : Metric::kTtfo)
                                             : (rt ? Metric::kE2eRt : Metric::kE2e);
      rejudge(v, hist.at(hm), m.slo->spec.percentile);
    }
    bool any_fail = false;
    bool all_pass = !m.slo->metrics.empty();
    for (const auto& v : m.slo->metrics) {
      any_fail = any_fail || v.verdict == Verdict::kFail;
      all_pass = all_pass && v.verdict == Verdict::kPass;
    }
    m.slo->verdict = any_fail ? Verdict::kFail : (all_pass ? Verdict::kPass : Verdict::kInconclusive);
  }

  MergedArtifact out;
  // The per-shard breakdown, with stragglers flagged. A shard's drain is the time from its last
  // measured intended start to its last measured completion: unlike the completion time itself it
  // does not depend on which shard the partition dealt the run's last requests to.
  std::vector<double> last_done(shards.size(), 0);
  std::vector<double> drain(shards.size(), 0);
  std::vector<double> measured_drains;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    std::optional<Nanos> last;
    std::optional<Nanos> last_intended;
    const MergedRecords one(std::vector<const ShardArtifact*>{shards[i].artifact});
    for (const auto& r : RecordRange(one)) {
      if (r.warmup) continue;
      if (r.t_done && (!last || *r.t_done > *last)) last = r.t_done;
      if (!last_intended || r.t_intended > *last_intended) last_intended = r.t_intended;
    }
    last_done[i] = last ? to_seconds(*last) : 0;
    drain[i] = last && last_intended ? to_seconds(*last - *last_intended) : 0;
    if (shards[i].measured) measured_drains.push_back(drain[i]);
  }
  std::sort(measured_drains.begin(), measured_drains.end());
  const double median_drain = measured_drains.empty() ? 0 : measured_drains[measured_drains.size() / 2];
  const double late_margin = std::max(0.1 * len, 0.1);
  json breakdown = json::array();
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const auto& s = shards[i];
    const json& r = s.artifact->result;
    std::vector<std::string> flags;
    const json& skew = at_path(r, "conditions.shard.start_skew_ms");
    if (skew.is_number() && std::fabs(skew.get<double>()) > 10.0) {
      flags.push_back(fmt::format("started {:.1f} ms {} --start-at (on its own system clock)",
                                  std::fabs(skew.get<double>()), skew.get<double>() > 0 ? "after" : "before"));
    }
    if (s.measured && n_shards > 1 && drain[i] > median_drain + late_margin) {
      flags.push_back(fmt::format("finished {:.2f} s after its last scheduled request, {:.2f} s later than the median "
                                  "shard (last measured request done at {:.2f} s)",
                                  drain[i], drain[i] - median_drain, last_done[i]));
    }
    if (at_path(r, "validity.valid") == false) {
      flags.push_back(fmt::format("INVALID on its own: {}",
                                  at_path(r, "validity.reason").is_string() ? at_path(r, "validity.reason").get<std::string>()
                                                                            : std::string("marked invalid")));
    }
    if (at_path(r, "interrupted") == true) flags.push_back("interrupted before the end of its run");
    if (!s.measured) flags.push_back("issued no measured request");
    for (const auto& f : flags) out.notes.push_back(fmt::format("shard {} ('{}'): {}", s.index, s.artifact->name, f));
    breakdown.push_back({
        {"shard", s.index},
        {"directory", s.artifact->name},
        {"hostname", at_path(r, "conditions.machine.hostname")},
        {"start_time", at_path(r, "conditions.start_time")},
        {"start_skew_ms", skew},
        {"window", r.value("window", json())},
        {"requests", r.value("requests", json())},
        {"completed", r.value("completed", json())},
        {"failed", r.value("failed", json())},
        {"request_throughput", r.value("request_throughput", json())},
        {"output_throughput", r.value("output_throughput", json())},
        {"achieved_send_rate", at_path(r, "load.achieved_send_rate")},
        {"ttft_p50_ms", at_path(r, "latency.ttft.p50_ms")},
        {"ttft_p99_ms", at_path(r, "latency.ttft.p99_ms")},
        {"e2e_p99_ms", at_path(r, "latency.e2e.p99_ms")},
        {"ttft_rt_p99_ms", at_path(r, "response_time.ttft.p99_ms")},
        {"ttfo_p99_ms", at_path(r, "latency.ttfo.p99_ms")},
        {"schedule_lag_p99_ms", at_path(r, "schedule_lag.p99_ms")},
        {"late_fraction", at_path(r, "schedule_lag.late_fraction")},
        {"valid", at_path(r, "validity.valid")},
        {"interrupted", r.value("interrupted", json())},
        {"last_completion_s", s.measured ? json(last_done[i]) : json(nullptr)},
        {"drain_s", s.measured ? json(drain[i]) : json(nullptr)},
        {"straggler", !flags.empty()},
        {"flags", flags},
    });
  }
  // Harmless differences worth knowing.
  {
    std::set<std::string> builds;
    for (const auto& s : shards) builds.insert(brief(at_path(s.artifact->result, "conditions.tool")));
    if (builds.size() > 1) {
      out.notes.push_back(fmt::format("the shards ran different builds of llmload {} (build type or compiler differ)",
                                      brief(at_path(ref, "conditions.tool.version"))));
    }
    if (at_path(ref, "conditions.shard.start_at").is_null() && n_shards > 1) {
      out.notes.push_back("the shards had no common --start-at: their windows line up only as well as they happened to "
                          "start together");
    }
  }

  // Start time: the common --start-at, else the earliest shard start.
  out.start_epoch_s = number_or(at_path(ref, "conditions.shard.start_at_epoch_s"), 0);
  if (out.start_epoch_s == 0) {
    bool first = true;
    for (const auto& s : shards) {
      const json& e = at_path(s.artifact->result, "conditions.start_epoch_s");
      if (e.is_number() && (first || e.get<double>() < out.start_epoch_s)) {
        out.start_epoch_s = e.get<double>();
        first = false;
      }
    }
  }

  // The merged result.json.
  json res = metrics_json(m);
  json cond = at_path(ref, "conditions");
  json command_lines = json::array();
  json machines = json::array();
  for (const auto& s : shards) {
    command_lines.push_back(at_path(s.artifact->result, "conditions.command_line"));
    json mach = at_path(s.artifact->result, "conditions.machine");
    if (mach.is_object()) mach["shard"] = s.index;
    machines.push_back(mach);
  }
  cond["command_line"] = command_lines;
  cond["machine"] = machines;
  const json& start_at = at_path(ref, "conditions.shard.start_at");
  cond["start_time"] = start_at.is_string() ? start_at : at_path(ref, "conditions.start_time");
  cond["start_epoch_s"] = out.start_epoch_s;
  cond["shard"] = {{"merged", true},
                   {"count", n_shards},
                   {"start_at", start_at},
                   {"start_at_epoch_s", at_path(ref, "conditions.shard.start_at_epoch_s")},
                   {"rule", at_path(ref, "conditions.shard.rule")},
                   {"partition", at_path(ref, "conditions.shard.partition")}};
  res["conditions"] = cond;
  // Token accounting: sums over the shards (estimated when any shard's was).
  {
    json tokens = res["tokens"];
    const char* sums[] = {"requests",        "requests_with_server_usage", "requested_input_tokens",
                          "input_tokens",    "requested_output_tokens",    "output_tokens",
                          "ended_early"};
    for (const char* k : sums) {
      std::int64_t total = 0;
      for (const auto& s : shards) total += int_at(s.artifact->result, std::string("tokens.") + k);
      tokens[k] = total;
    }
    for (const char* k : {"server_counted_input_tokens", "requested_input_tokens_of_those"}) {
      bool any = false;
      std::int64_t total = 0;
      for (const auto& s : shards) {
        const json& v = at_path(s.artifact->result, std::string("tokens.") + k);
        if (v.is_number()) {
          any = true;
          total += v.get<std::int64_t>();
        }
      }
      tokens[k] = any ? json(total) : json(nullptr);
    }
    bool estimated = false;
    for (const auto& s : shards) estimated = estimated || at_path(s.artifact->result, "tokens.estimated") == true;
    tokens["estimated"] = estimated;
    if (const json& em = at_path(ref, "tokens.estimate_method"); !em.is_null()) tokens["estimate_method"] = em;
    res["tokens"] = tokens;
  }
  res["load"]["offered_rate"] = at_path(ref, "load.offered_rate");
  res["load"]["offered_concurrency"] = at_path(ref, "load.offered_concurrency");
  res["load"]["measured_from"] = "t_send of the measured requests of every shard, as offsets from the common start";
  bool interrupted = false;
  std::int64_t max_in_flight = 0;
  std::int64_t connections = 0;
  for (const auto& s : shards) {
    interrupted = interrupted || at_path(s.artifact->result, "interrupted") == true;
    max_in_flight += int_at(s.artifact->result, "max_in_flight");
    connections += int_at(s.artifact->result, "connections_opened");
  }
  res["interrupted"] = interrupted;
  res["max_in_flight"] = max_in_flight;
  res["max_in_flight_note"] = "the sum of the shards' maxima (an upper bound of the run's)";
  res["connections_opened"] = connections;
  res["non_streaming_note"] = at_path(ref, "non_streaming_note");
  res["shards"] = breakdown;
  res["merge"] = {
      {"shards", n_shards},
      {"histograms", "each metric's shard histograms added exactly (HdrHistogram, same layout): percentiles as from "
                     "one histogram of every request; means and SDs pooled exactly"},
      {"counts", "recomputed from every shard's requests.jsonl with the single-run rules"},
      {"window", window.method},
      {"output_tokens", "the sum of the output tokens each shard saw arrive in its own window"},
      {"clocks", "each shard measured on its own monotonic clock from its own start at the common start time; no "
                 "timestamps of different machines are subtracted"},
      {"notes", out.notes},
  };
  out.result = std::move(res);

  for (const auto& s : shards) out.record_count += static_cast<std::int64_t>(s.count);

  // The console report, with the shard table.
  const std::string title =
      fmt::format("llmload {} | {} | merged {} shards",
                  at_path(ref, "conditions.scenario.scenario").is_string() ? at_path(ref, "conditions.scenario.scenario").get<std::string>() : "run",
                  at_path(ref, "conditions.model").is_string() ? at_path(ref, "conditions.model").get<std::string>() : "",
                  n_shards);
  std::string o = console_report(m, title);
  o += fmt::format("{:-^78}\n", " Shards ");
  o += fmt::format("{:<6}{:>11}{:>8}{:>9}{:>9}{:>10}{:>10}{:>10}{:>12}{:>10}\n", "shard", "completed", "failed", "req/s",
                   "send/s", "TTFT p50", "TTFT p99", "E2E p99", "last done s", "skew ms");
  auto num = [](const json& v, const char* fmtstr) -> std::string {
    return v.is_number() ? fmt::format(fmt::runtime(fmtstr), v.get<double>()) : std::string("-");
  };
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const json& b = breakdown[i];
    o += fmt::format("{:<6}{:>11}{:>8}{:>9}{:>9}{:>10}{:>10}{:>10}{:>12}{:>10}{}\n", shards[i].index,
                     num(b["completed"], "{:.0f}"), num(b["failed"], "{:.0f}"), num(b["request_throughput"], "{:.2f}"),
                     num(b["achieved_send_rate"], "{:.2f}"), num(b["ttft_p50_ms"], "{:.2f}"),
                     num(b["ttft_p99_ms"], "{:.2f}"), num(b["e2e_p99_ms"], "{:.2f}"),
                     num(b["last_completion_s"], "{:.3f}"), num(b["start_skew_ms"], "{:.2f}"),
                     b["straggler"].get<bool>() ? "  <- see NOTE" : "");
  }
  for (const auto& note : out.notes) o += "NOTE: " + note + "\n";
  o += std::string(78, '=') + "\n";
  out.console = std::move(o);
  out.metrics = std::move(m);
  return out;
}

}  // namespace llmload::analysis
