// Trace replay: Azure LLM inference CSV and Mooncake JSONL.
//
// Both give arrival times and token lengths only; prompts are synthesized. Rows are parsed once
// into a compact table (Mooncake hash_ids in one flat array); item(i) builds the prompt text on
// demand.

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>

#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/prompt.hpp"
#include "llmload/loadgen/workload/sources.hpp"
#include "text_util.hpp"

namespace llmload {

namespace {

using json = nlohmann::json;
using workload_detail::parse_int;
using workload_detail::to_seconds;
using workload_detail::trim;

constexpr std::string_view kAzureForm =
    "expected TIMESTAMP,ContextTokens,GeneratedTokens rows like \"2023-11-16 18:17:03.9799600,4808,10\"";
constexpr std::string_view kMooncakeForm =
    "expected one JSON object a line like {\"timestamp\": 0, \"input_length\": 6758, \"output_length\": 500, "
    "\"hash_ids\": [0, 1, 2]} (timestamp in milliseconds)";
constexpr std::uint64_t kTraceTextStream = 0x6f708192a3b4c5d6ULL;

// One request of the trace as read. ts_ns is on the trace's own clock.
struct TraceRow {
  std::int64_t ts_ns = 0;
  std::int64_t input = 0;
  std::int64_t output = 0;
  std::size_t hash_begin = 0;  // into ParsedTrace::hashes
  std::size_t hash_count = 0;
};

struct ParsedTrace {
  std::vector<TraceRow> rows;
  std::vector<std::uint64_t> hashes;
  std::int64_t raised_to_one = 0;  // lengths of 0 in the file, sent as 1
};

std::string excerpt(std::string_view line) {
  constexpr std::size_t kMax = 120;
  return line.size() <= kMax ? std::string(line) : std::string(line.substr(0, kMax)) + "...";
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

bool istarts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}

// Splits a CSV line into at most 3 trimmed fields; returns the number of fields found (4 means "more than 3").
std::size_t split_csv(std::string_view line, std::array<std::string_view, 3>& fields) {
  std::size_t count = 0;
  std::size_t pos = 0;
  while (true) {
    const auto comma = line.find(',', pos);
    const auto field = line.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    if (count < fields.size()) fields[count] = trim(field);
    ++count;
    if (comma == std::string_view::npos || count > fields.size()) return count;
    pos = comma + 1;
  }
}

// A length from the trace: 0 is raised to 1 (counted), negatives and huge values are errors.
std::optional<std::int64_t> trace_length(std::optional<std::int64_t> v, std::int64_t& raised) {
  if (!v || *v < 0 || *v > kMaxLength) return std::nullopt;
  if (*v == 0) {
    ++raised;
    return 1;
  }
  return v;
}

// --- Azure --------------------------------------------------------------------------------------

void check_azure_header(std::string_view line, const std::string& where) {
  std::array<std::string_view, 3> f;
  if (split_csv(line, f) != 3 || !iequals(f[0], "TIMESTAMP") || !iequals(f[1], "ContextTokens") ||
      !iequals(f[2], "GeneratedTokens")) {
    throw ConfigError(fmt::format("{}: unexpected header \"{}\": {}", where, excerpt(line), kAzureForm));
  }
}

ParsedTrace parse_azure(std::string_view content, const std::string& path) {
  ParsedTrace t;
  bool first = true;
  workload_detail::for_each_line(content, [&](std::int64_t no, std::string_view raw) {
    const std::string_view line = trim(raw);
    if (line.empty()) return true;
    const bool is_first = std::exchange(first, false);
    if (is_first && istarts_with(line, "TIMESTAMP")) {
      check_azure_header(line, fmt::format("{}:{}", path, no));
      return true;
    }
    std::array<std::string_view, 3> f;
    const std::size_t n = split_csv(line, f);
    const auto ts = n == 3 ? parse_azure_timestamp(f[0]) : std::nullopt;
    const auto in = n == 3 ? trace_length(parse_int(f[1]), t.raised_to_one) : std::nullopt;
    const auto out = n == 3 ? trace_length(parse_int(f[2]), t.raised_to_one) : std::nullopt;
    if (!ts || !in || !out) {
      throw ConfigError(fmt::format("{}:{}: cannot read \"{}\": {}, token counts integers in [0, {}]", path, no,
                                    excerpt(line), kAzureForm, kMaxLength));
    }
    t.rows.push_back(TraceRow{*ts, *in, *out, 0, 0});
    return true;
  });
  return t;
}

// Howard Hinnant's days_from_civil: days since 1970-01-01 of a proleptic Gregorian date.
std::int64_t days_from_civil(std::int64_t y, std::int64_t m, std::int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const std::int64_t yoe = y - era * 400;
  const std::int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// --- Mooncake -----------------------------------------------------------------------------------

std::optional<std::int64_t> json_int(const json& obj, const char* key) {
  const auto it = obj.find(key);
  if (it == obj.end() || !it->is_number_integer()) return std::nullopt;
  if (it->is_number_unsigned() && it->get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxLength)) {
    return std::nullopt;
  }
  return it->get<std::int64_t>();
}

// Milliseconds (integer or not) → nanoseconds.
std::optional<std::int64_t> mooncake_timestamp(const json& obj) {
  const auto it = obj.find("timestamp");
  if (it == obj.end() || !it->is_number()) return std::nullopt;
  if (it->is_number_integer() && !it->is_number_unsigned()) {
    const auto ms = it->get<std::int64_t>();
    if (std::abs(ms) > 9'000'000'000'000) return std::nullopt;  // beyond int64 nanoseconds
    return ms * 1'000'000;
  }
  const double ms = it->get<double>();
  if (!std::isfinite(ms) || std::abs(ms) > 9e12) return std::nullopt;
  return std::llround(ms * 1e6);
}

bool read_hash_ids(const json& obj, std::vector<std::uint64_t>& out) {
  const auto it = obj.find("hash_ids");
  if (it == obj.end()) return true;  // no sharing information: the prompt is all its own
  if (!it->is_array()) return false;
  for (const auto& h : *it) {
    if (!h.is_number_integer() || (!h.is_number_unsigned() && h.get<std::int64_t>() < 0)) return false;
    out.push_back(h.get<std::uint64_t>());
  }
  return true;
}

ParsedTrace parse_mooncake(std::string_view content, const std::string& path) {
  ParsedTrace t;
  workload_detail::for_each_line(content, [&](std::int64_t no, std::string_view raw) {
    const std::string_view line = trim(raw);
    if (line.empty()) return true;
    const json obj = workload_detail::parse_json_line(line, fmt::format("{}:{}", path, no));
    const bool is_obj = !obj.is_discarded() && obj.is_object();
    TraceRow r;
    r.hash_begin = t.hashes.size();
    const auto ts = is_obj ? mooncake_timestamp(obj) : std::nullopt;
    const auto in = is_obj ? trace_length(json_int(obj, "input_length"), t.raised_to_one) : std::nullopt;
    const auto out = is_obj ? trace_length(json_int(obj, "output_length"), t.raised_to_one) : std::nullopt;
    if (!ts || !in || !out || !read_hash_ids(obj, t.hashes)) {
      throw ConfigError(fmt::format("{}:{}: cannot read \"{}\": {}; lengths integers in [0, {}], hash_ids "
                                    "non-negative integers", path, no, excerpt(line), kMooncakeForm, kMaxLength));
    }
    r.ts_ns = *ts;
    r.input = *in;
    r.output = *out;
    r.hash_count = t.hashes.size() - r.hash_begin;
    t.rows.push_back(r);
    return true;
  });
  return t;
}

// --- the workload -------------------------------------------------------------------------------

struct TraceRequest {
  std::int64_t arrival_ns = 0;
  std::int64_t input = 0;
  std::int64_t output = 0;
  std::size_t hash_begin = 0;
  std::size_t hash_count = 0;
};

class TraceWorkload final : public Workload {
 public:
  TraceWorkload(TraceFormat format, std::vector<TraceRequest> requests, std::vector<std::uint64_t> hashes,
                std::uint64_t seed, TokenModel tokens, std::int64_t block_tokens, nlohmann::json description)
      : format_(format),
        requests_(std::move(requests)),
        hashes_(std::move(hashes)),
        seed_(seed),
        tokens_(std::move(tokens)),
        block_tokens_(block_tokens),
        description_(std::move(description)) {}

  std::optional<std::uint64_t> size() const override { return requests_.size(); }
  bool timed() const override { return true; }
  nlohmann::json describe() const override { return description_; }

  WorkItem item(std::uint64_t index) const override {
    const TraceRequest& r = requests_.at(index);
    const std::uint64_t own_seed = mix_seed(mix_seed(seed_ + index) ^ kTraceTextStream);
    const std::int64_t words = std::max<std::int64_t>(1, r.input - tokens_.overhead);
    WorkItem w;
    w.arrival = Nanos(r.arrival_ns);
    w.output_tokens = r.output;
    w.input_tokens = tokens_.overhead + words;
    if (format_ == TraceFormat::kMooncake && r.hash_count > 0) {
      w.prompt = block_prompt(r, words, own_seed);
      w.prefix_group = static_cast<std::int64_t>(hashes_[r.hash_begin]);
    } else {
      w.prompt = tokens_.words_text(words, own_seed);
    }
    return w;
  }

 private:
  // Blocks of block_tokens_ words, block k from the seed of hash_ids[k] (beyond the listed ids, from
  // the request's own seed), joined by single spaces; the last block is cut so the prompt has
  // exactly `words` words. words_text(n, s) is the first n words of words_text(m >= n, s), so a cut
  // block is a prefix of the full one and shared prefixes stay byte-identical.
  std::string block_prompt(const TraceRequest& r, std::int64_t words, std::uint64_t own_seed) const {
    std::string text;
    text.reserve(static_cast<std::size_t>(words) * 6);
    std::int64_t done = 0;
    for (std::size_t k = 0; done < words; ++k) {
      const std::int64_t n = std::min(block_tokens_, words - done);
      const std::uint64_t block_seed =
          k < r.hash_count ? mix_seed(seed_ ^ hashes_[r.hash_begin + k]) : mix_seed(own_seed + k);
      if (done > 0) text.push_back(' ');
      text += tokens_.words_text(n, block_seed);
      done += n;
    }
    return text;
  }

  TraceFormat format_;
  std::vector<TraceRequest> requests_;
  std::vector<std::uint64_t> hashes_;
  std::uint64_t seed_;
  TokenModel tokens_;
  std::int64_t block_tokens_;
  nlohmann::json description_;
};

TraceFormat choose_format(const WorkloadConfig& cfg, std::string_view content) {
  if (cfg.trace_format.empty()) return detect_trace_format(content, cfg.trace_path);
  if (cfg.trace_format == "azure") return TraceFormat::kAzure;
  if (cfg.trace_format == "mooncake") return TraceFormat::kMooncake;
  throw ConfigError(fmt::format("unknown trace format \"{}\": use azure (Azure LLM inference CSV), mooncake "
                                "(Mooncake JSONL) or leave --trace-format empty to detect it", cfg.trace_format));
}

void check_trace_settings(const WorkloadConfig& cfg) {
  if (cfg.trace_path.empty()) {
    throw ConfigError("dataset trace needs a file: set --trace (trace_path) to an Azure CSV or Mooncake JSONL trace");
  }
  if (cfg.trace_block_tokens < 1) {
    throw ConfigError(fmt::format("trace_block_tokens is {}: it must be at least 1 (Mooncake traces use 512)",
                                  cfg.trace_block_tokens));
  }
  if (cfg.trace_start && cfg.trace_start->count() < 0) {
    throw ConfigError(fmt::format("--trace-start is negative ({} s): it is an offset from the trace's first request",
                                  to_seconds(cfg.trace_start->count())));
  }
  if (cfg.trace_duration && cfg.trace_duration->count() <= 0) {
    throw ConfigError(fmt::format("--trace-duration is {} s: it must be positive",
                                  to_seconds(cfg.trace_duration->count())));
  }
}

// Window, time scale and limit applied to rows already ordered by time.
struct Selection {
  std::vector<TraceRequest> requests;
  std::vector<std::uint64_t> hashes;
  std::int64_t first_ts = 0;  // trace clock, of the first kept row
  std::int64_t last_ts = 0;
};

Selection select_rows(const ParsedTrace& t, const WorkloadConfig& cfg, std::optional<std::uint64_t> max_items) {
  Selection s;
  const std::int64_t origin = t.rows.front().ts_ns;
  const std::int64_t start = cfg.trace_start ? cfg.trace_start->count() : 0;
  for (const TraceRow& r : t.rows) {
    if (max_items && s.requests.size() >= *max_items) break;
    const std::int64_t offset = r.ts_ns - origin;
    if (offset < start) continue;
    if (cfg.trace_duration && offset - start >= cfg.trace_duration->count()) break;
    if (s.requests.empty()) s.first_ts = r.ts_ns;
    s.last_ts = r.ts_ns;
    const double scaled = static_cast<double>(r.ts_ns - s.first_ts) / cfg.time_scale;
    TraceRequest q{std::llround(scaled), r.input, r.output, s.hashes.size(), r.hash_count};
    s.hashes.insert(s.hashes.end(), t.hashes.begin() + static_cast<std::ptrdiff_t>(r.hash_begin),
                    t.hashes.begin() + static_cast<std::ptrdiff_t>(r.hash_begin + r.hash_count));
    s.requests.push_back(q);
  }
  return s;
}

nlohmann::json sharing_stats(const Selection& s, std::int64_t block_tokens) {
  std::unordered_set<std::uint64_t> seen_blocks;
  std::unordered_set<std::uint64_t> seen_first;
  std::int64_t reused_first = 0;
  for (const auto& r : s.requests) {
    if (r.hash_count == 0) continue;
    if (!seen_first.insert(s.hashes[r.hash_begin]).second) ++reused_first;
  }
  seen_blocks.insert(s.hashes.begin(), s.hashes.end());
  const auto refs = static_cast<double>(s.hashes.size());
  return {{"block_tokens", block_tokens},
          {"hash_block_refs", s.hashes.size()},
          {"distinct_hash_blocks", seen_blocks.size()},
          {"reused_block_fraction", refs > 0 ? 1.0 - static_cast<double>(seen_blocks.size()) / refs : 0.0},
          {"requests_sharing_first_block", reused_first},
          {"meaning",
           "reused_block_fraction: share of block references that repeat an earlier block (the prefix-cache hit "
           "ceiling, in blocks); requests_sharing_first_block: requests whose first block appeared in an earlier "
           "request"}};
}

nlohmann::json describe_trace(TraceFormat format, const WorkloadConfig& cfg, const ParsedTrace& t, bool was_sorted,
                              const Selection& s, std::optional<std::uint64_t> max_items) {
  std::int64_t in_total = 0;
  std::int64_t out_total = 0;
  for (const auto& r : s.requests) {
    in_total += r.input;
    out_total += r.output;
  }
  const auto n = static_cast<double>(s.requests.size());
  nlohmann::json d;
  d["dataset"] = "trace";
  d["format"] = to_string(format);
  d["path"] = cfg.trace_path;
  d["rows_in_file"] = t.rows.size();
  d["rows_were_in_time_order"] = was_sorted;
  d["requests"] = s.requests.size();
  d["window"] = {{"start_s", cfg.trace_start ? to_seconds(cfg.trace_start->count()) : 0.0},
                 {"duration_s", cfg.trace_duration ? nlohmann::json(to_seconds(cfg.trace_duration->count()))
                                                   : nlohmann::json(nullptr)},
                 {"relative_to", "the trace's first request; arrivals count from the first kept request"}};
  d["max_items"] = max_items ? nlohmann::json(*max_items) : nlohmann::json(nullptr);
  d["time_scale"] = cfg.time_scale;
  d["trace_span_s"] = to_seconds(s.last_ts - s.first_ts);
  d["replay_span_s"] = to_seconds(s.requests.back().arrival_ns);
  d["input_tokens_total"] = in_total;
  d["output_tokens_total"] = out_total;
  d["input_tokens_mean"] = static_cast<double>(in_total) / n;
  d["output_tokens_mean"] = static_cast<double>(out_total) / n;
  d["lengths_raised_to_1"] = t.raised_to_one;
  if (format == TraceFormat::kMooncake) {
    d["prompts"] = "synthesized: blocks of block_tokens words, one per hash_id (equal ids, identical text)";
    d["shared_prefix"] = sharing_stats(s, cfg.trace_block_tokens);
  } else {
    d["prompts"] = "synthesized per request (no shared prefixes)";
  }
  return d;
}

}  // namespace

std::string_view to_string(TraceFormat f) { return f == TraceFormat::kAzure ? "azure" : "mooncake"; }

TraceFormat detect_trace_format(std::string_view content, const std::string& path) {
  std::string_view first;
  workload_detail::for_each_line(content, [&](std::int64_t, std::string_view line) {
    first = trim(line);
    return first.empty();
  });
  if (first.empty()) throw ConfigError(fmt::format("trace \"{}\" is empty", path));
  if (first.front() == '{') return TraceFormat::kMooncake;
  std::array<std::string_view, 3> fields;
  if (istarts_with(first, "TIMESTAMP") || split_csv(first, fields) == 3) return TraceFormat::kAzure;
  throw ConfigError(fmt::format(
      "cannot tell the format of trace \"{}\" from its first line \"{}\": expected an Azure LLM inference CSV "
      "(header TIMESTAMP,ContextTokens,GeneratedTokens) or Mooncake JSONL (lines like {{\"timestamp\": 0, "
      "\"input_length\": 6758, \"output_length\": 500, \"hash_ids\": [0, 1]}}); set --trace-format azure or "
      "--trace-format mooncake", path, excerpt(first)));
}

std::optional<std::int64_t> parse_azure_timestamp(std::string_view s) {
  s = trim(s);
  if (s.size() < 19) return std::nullopt;
  auto digits = [&](std::size_t pos, std::size_t len) -> std::optional<std::int64_t> {
    std::int64_t v = 0;
    for (std::size_t i = pos; i < pos + len; ++i) {
      if (s[i] < '0' || s[i] > '9') return std::nullopt;
      v = v * 10 + (s[i] - '0');
    }
    return v;
  };
  if (s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') || s[13] != ':' || s[16] != ':') {
    return std::nullopt;
  }
  const auto y = digits(0, 4), mo = digits(5, 2), d = digits(8, 2);
  const auto h = digits(11, 2), mi = digits(14, 2), sec = digits(17, 2);
  if (!y || !mo || !d || !h || !mi || !sec || *mo < 1 || *mo > 12 || *d < 1 || *d > 31 || *h > 23 || *mi > 59 ||
      *sec > 60) {
    return std::nullopt;
  }
  std::int64_t frac_ns = 0;
  if (s.size() > 19) {
    if (s[19] != '.' || s.size() == 20) return std::nullopt;
    std::int64_t scale = 100'000'000;  // the first fractional digit is 10^8 ns
    for (std::size_t i = 20; i < s.size(); ++i) {
      if (s[i] < '0' || s[i] > '9') return std::nullopt;
      frac_ns += (s[i] - '0') * scale;  // digits past the 9th (scale 0) add nothing
      scale /= 10;
    }
  }
  const std::int64_t seconds = days_from_civil(*y, *mo, *d) * 86'400 + *h * 3'600 + *mi * 60 + *sec;
  return seconds * 1'000'000'000 + frac_ns;
}

std::unique_ptr<Workload> make_trace_workload(const WorkloadConfig& config, std::optional<std::uint64_t> max_items,
                                              std::uint64_t seed, const TokenModel& tokens) {
  WorkloadConfig cfg = config;
  if (cfg.trace_path.empty()) cfg.trace_path = cfg.dataset_path;  // --dataset-name trace --dataset-path FILE
  check_trace_settings(cfg);
  if (tokens.words.empty()) throw ConfigError("the token model has no words to synthesize prompts from");
  const std::string content = workload_detail::read_text_file(cfg.trace_path, "trace");
  const TraceFormat format = choose_format(cfg, content);
  ParsedTrace t = format == TraceFormat::kAzure ? parse_azure(content, cfg.trace_path)
                                                : parse_mooncake(content, cfg.trace_path);
  if (t.rows.empty()) {
    throw ConfigError(fmt::format("trace \"{}\" has no requests ({})", cfg.trace_path,
                                  format == TraceFormat::kAzure ? kAzureForm : kMooncakeForm));
  }
  const auto by_time = [](const TraceRow& a, const TraceRow& b) { return a.ts_ns < b.ts_ns; };
  const bool was_sorted = std::is_sorted(t.rows.begin(), t.rows.end(), by_time);
  if (!was_sorted) std::stable_sort(t.rows.begin(), t.rows.end(), by_time);

  Selection s = select_rows(t, cfg, max_items);
  if (s.requests.empty()) {
    throw ConfigError(fmt::format(
        "trace \"{}\": no requests in the window (start {:g} s, duration {}, request limit {}); the trace has {} "
        "requests over {:.3f} s: lower --trace-start or widen --trace-duration", cfg.trace_path,
        cfg.trace_start ? to_seconds(cfg.trace_start->count()) : 0.0,
        cfg.trace_duration ? fmt::format("{:g} s", to_seconds(cfg.trace_duration->count())) : std::string("unbounded"),
        max_items ? fmt::format("{}", *max_items) : std::string("none"), t.rows.size(),
        to_seconds(t.rows.back().ts_ns - t.rows.front().ts_ns)));
  }
  nlohmann::json d = describe_trace(format, cfg, t, was_sorted, s, max_items);
  return std::make_unique<TraceWorkload>(format, std::move(s.requests), std::move(s.hashes), seed, tokens,
                                         cfg.trace_block_tokens, std::move(d));
}

}  // namespace llmload
