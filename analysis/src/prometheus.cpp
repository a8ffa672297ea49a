#include "llmload/analysis/prometheus.hpp"
#include "numeric.hpp"
#include "prometheus_json.hpp"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

namespace llmload::analysis::prom {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool is_blank(char c) { return c == ' ' || c == '\t'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':'; }
bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }
bool is_label_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_label_char(char c) { return is_label_start(c) || (c >= '0' && c <= '9'); }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    char y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// A float as Prometheus (Go's strconv.ParseFloat) reads it: decimal or exponent notation, an
// optional sign, NaN and Inf/Infinity in any case.
std::optional<double> parse_float(std::string_view s) {
  if (s.empty()) return std::nullopt;
  bool negative = false;
  std::string_view body = s;
  if (body.front() == '+' || body.front() == '-') {
    negative = body.front() == '-';
    body.remove_prefix(1);
  }
  if (body.empty()) return std::nullopt;
  if (iequals(body, "nan")) return kNaN;
  if (iequals(body, "inf") || iequals(body, "infinity")) return negative ? -kInf : kInf;
  // from_chars would also take "inf"/"nan" spellings and hex: only digits, '.', 'e' get here.
  for (char c : body) {
    if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-')) return std::nullopt;
  }
  double v = 0;
  const auto [p, ec] = std::from_chars(body.data(), body.data() + body.size(), v, std::chars_format::general);
  if (ec == std::errc::result_out_of_range) {
    // Go returns ±Inf (overflow) or 0 (underflow) with an error; be lenient: clamp.
    bool big = false;
    for (char c : body) {
      if (c == 'e' || c == 'E') break;
      if (c >= '1' && c <= '9') big = true;
    }
    const auto epos = body.find_first_of("eE");
    if (epos != std::string_view::npos && epos + 1 < body.size() && body[epos + 1] == '-') big = false;
    v = big ? kInf : 0.0;
  } else if (ec != std::errc() || p != body.data() + body.size()) {
    return std::nullopt;
  }
  return negative ? -v : v;
}

std::string printable(std::string_view s, std::size_t max = 40) {
  std::string out;
  for (char c : s.substr(0, max)) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  if (s.size() > max) out += "...";
  return out;
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Exposition run() {
    std::size_t pos = 0;
    while (pos < text_.size()) {
      ++line_no_;
      std::size_t nl = text_.find('\n', pos);
      if (nl == std::string_view::npos) nl = text_.size();
      std::string_view line = text_.substr(pos, nl - pos);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      parse_line(line);
      pos = nl + 1;
    }
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw ParseError(line_no_, what); }

  static void skip_blanks(std::string_view s, std::size_t& i) {
    while (i < s.size() && is_blank(s[i])) ++i;
  }

  static std::string_view read_token(std::string_view s, std::size_t& i) {
    const std::size_t start = i;
    while (i < s.size() && !is_blank(s[i])) ++i;
    return s.substr(start, i - start);
  }

  std::string_view read_metric_name(std::string_view s, std::size_t& i) const {
    const std::size_t start = i;
    if (i >= s.size() || !is_name_start(s[i])) {
      fail(fmt::format("expected a metric name, found '{}'", printable(s.substr(i))));
    }
    while (i < s.size() && is_name_char(s[i])) ++i;
    return s.substr(start, i - start);
  }

  void parse_line(std::string_view line) {
    std::size_t i = 0;
    skip_blanks(line, i);
    if (i == line.size()) return;  // blank line
    if (line[i] == '#') return parse_comment(line, i + 1);
    parse_sample(line, i);
  }

  // The index of the family `name`, created (untyped) when new.
  std::size_t family_index(std::string_view name) {
    auto it = index_.find(std::string(name));
    if (it != index_.end()) return it->second;
    index_.emplace(std::string(name), out_.families.size());
    Family f;
    f.name = std::string(name);
    out_.families.push_back(std::move(f));
    return out_.families.size() - 1;
  }

  void parse_comment(std::string_view line, std::size_t i) {
    skip_blanks(line, i);
    const std::string_view keyword = read_token(line, i);
    if (keyword != "HELP" && keyword != "TYPE") return;  // an ordinary comment
    skip_blanks(line, i);
    if (i == line.size()) fail(fmt::format("# {} without a metric name", keyword));
    const std::string_view name = read_metric_name(line, i);
    if (i < line.size() && !is_blank(line[i])) {
      fail(fmt::format("# {}: invalid character '{}' in the metric name", keyword, printable(line.substr(i, 1))));
    }
    const std::size_t fidx = family_index(name);
    if (keyword == "HELP") {
      if (i < line.size()) ++i;  // the one separating blank; the rest is the text
      skip_blanks(line, i);
      if (help_seen_.count(fidx) != 0) fail(fmt::format("second HELP line for metric '{}'", name));
      help_seen_.emplace(fidx, true);
      std::string help;
      for (; i < line.size(); ++i) {
        if (line[i] == '\\' && i + 1 < line.size()) {
          const char n = line[i + 1];
          if (n == 'n') {
            help += '\n';
            ++i;
            continue;
          }
          if (n == '\\') {
            help += '\\';
            ++i;
            continue;
          }
        }
        help += line[i];  // other backslashes are kept as written
      }
      out_.families[fidx].help = std::move(help);
    } else {
      skip_blanks(line, i);
      const std::string_view type = read_token(line, i);
      skip_blanks(line, i);
      if (i != line.size()) fail(fmt::format("# TYPE {}: unexpected text after the type: '{}'", name, printable(line.substr(i))));
      MetricType t{};
      if (type == "counter") {
        t = MetricType::kCounter;
      } else if (type == "gauge") {
        t = MetricType::kGauge;
      } else if (type == "histogram") {
        t = MetricType::kHistogram;
      } else if (type == "summary") {
        t = MetricType::kSummary;
      } else if (type == "untyped") {
        t = MetricType::kUntyped;
      } else {
        fail(fmt::format("# TYPE {}: unknown type '{}' (expected counter, gauge, histogram, summary or untyped)", name,
                         printable(type)));
      }
      if (type_seen_.count(fidx) != 0) fail(fmt::format("second TYPE line for metric '{}'", name));
      type_seen_.emplace(fidx, true);
      out_.families[fidx].type = t;
    }
    current_ = fidx;
  }

  static bool belongs(const Family& f, std::string_view sample) {
    if (sample == f.name) return true;
    if (f.type != MetricType::kHistogram && f.type != MetricType::kSummary) return false;
    if (sample.size() <= f.name.size() || sample.substr(0, f.name.size()) != f.name) return false;
    const std::string_view suffix = sample.substr(f.name.size());
    return suffix == "_sum" || suffix == "_count" || (f.type == MetricType::kHistogram && suffix == "_bucket");
  }

  std::size_t family_for(std::string_view sample) {
    if (current_ && belongs(out_.families[*current_], sample)) return *current_;
    if (auto it = index_.find(std::string(sample)); it != index_.end()) return it->second;
    for (std::string_view suffix : {std::string_view("_bucket"), std::string_view("_sum"), std::string_view("_count")}) {
      if (sample.size() > suffix.size() && sample.substr(sample.size() - suffix.size()) == suffix) {
        const std::string base(sample.substr(0, sample.size() - suffix.size()));
        if (auto it = index_.find(base); it != index_.end() && belongs(out_.families[it->second], sample)) {
          return it->second;
        }
      }
    }
    return family_index(sample);
  }

  void parse_sample(std::string_view line, std::size_t i) {
    Sample s;
    s.name = std::string(read_metric_name(line, i));
    const std::size_t name_end = i;
    skip_blanks(line, i);
    if (i < line.size() && line[i] == '{') {
      ++i;
      parse_labels(line, i, s);
      if (i < line.size() && !is_blank(line[i])) {
        fail(fmt::format("metric '{}': invalid character '{}' after the label set", s.name, printable(line.substr(i, 1))));
      }
    } else if (i == name_end && i < line.size()) {
      fail(fmt::format("metric '{}': invalid character '{}' after the name", s.name, printable(line.substr(i, 1))));
    }
    skip_blanks(line, i);
    const std::string_view value = read_token(line, i);
    if (value.empty()) fail(fmt::format("metric '{}': missing value", s.name));
    const auto v = parse_float(value);
    if (!v) fail(fmt::format("metric '{}': value '{}' is not a number", s.name, printable(value)));
    s.value = *v;
    skip_blanks(line, i);
    if (i < line.size()) {
      const std::string_view ts = read_token(line, i);
      std::int64_t t = 0;
      const auto [p, ec] = std::from_chars(ts.data(), ts.data() + ts.size(), t);
      if (ec != std::errc() || p != ts.data() + ts.size()) {
        fail(fmt::format("metric '{}': timestamp '{}' is not an integer (milliseconds)", s.name, printable(ts)));
      }
      s.timestamp_ms = t;
      skip_blanks(line, i);
      if (i < line.size()) {
        fail(fmt::format("metric '{}': unexpected text after the timestamp: '{}'", s.name, printable(line.substr(i))));
      }
    }
    const std::size_t fidx = family_for(s.name);
    Family& f = out_.families[fidx];
    if (f.type == MetricType::kHistogram && s.name.size() > 7 && s.name.compare(s.name.size() - 7, 7, "_bucket") == 0) {
      const std::string* le = s.label("le");
      if (le == nullptr) fail(fmt::format("histogram bucket '{}' has no 'le' label", s.name));
      if (!parse_float(*le)) fail(fmt::format("histogram bucket '{}': le=\"{}\" is not a number", s.name, printable(*le)));
    }
    if (f.type == MetricType::kSummary && s.name == f.name) {
      const std::string* q = s.label("quantile");
      if (q == nullptr || !parse_float(*q)) {
        fail(fmt::format("summary '{}': a sample needs a numeric 'quantile' label", s.name));
      }
    }
    current_ = fidx;
    f.samples.push_back(std::move(s));
  }

  void parse_labels(std::string_view line, std::size_t& i, Sample& s) {
    for (;;) {
      skip_blanks(line, i);
      if (i >= line.size()) fail(fmt::format("metric '{}': label set not closed with '}}'", s.name));
      if (line[i] == '}') {
        ++i;
        return;
      }
      if (!is_label_start(line[i])) {
        fail(fmt::format("metric '{}': expected a label name, found '{}'", s.name, printable(line.substr(i))));
      }
      const std::size_t start = i;
      while (i < line.size() && is_label_char(line[i])) ++i;
      std::string key(line.substr(start, i - start));
      skip_blanks(line, i);
      if (i >= line.size() || line[i] != '=') fail(fmt::format("metric '{}': expected '=' after label '{}'", s.name, key));
      ++i;
      skip_blanks(line, i);
      if (i >= line.size() || line[i] != '"') {
        fail(fmt::format("metric '{}': label '{}': the value must be in double quotes", s.name, key));
      }
      ++i;
      std::string value;
      bool closed = false;
      while (i < line.size()) {
        const char c = line[i++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c == '\\') {
          if (i >= line.size()) break;
          const char e = line[i++];
          if (e == '\\') {
            value += '\\';
          } else if (e == '"') {
            value += '"';
          } else if (e == 'n') {
            value += '\n';
          } else {
            fail(fmt::format("metric '{}': label '{}': invalid escape '\\{}' (only \\\\, \\\" and \\n)", s.name, key,
                             printable(std::string_view(&e, 1))));
          }
          continue;
        }
        value += c;
      }
      if (!closed) fail(fmt::format("metric '{}': label '{}': unterminated value (no closing '\"')", s.name, key));
      if (s.label(key) != nullptr) fail(fmt::format("metric '{}': label '{}' appears twice", s.name, key));
      s.labels.emplace_back(std::move(key), std::move(value));
      skip_blanks(line, i);
      if (i < line.size() && line[i] == ',') {
        ++i;
        continue;
      }
      if (i < line.size() && line[i] == '}') continue;  // closed on the next turn
      if (i >= line.size()) fail(fmt::format("metric '{}': label set not closed with '}}'", s.name));
      fail(fmt::format("metric '{}': expected ',' or '}}' after a label value, found '{}'", s.name,
                       printable(line.substr(i))));
    }
  }

  std::string_view text_;
  std::size_t line_no_ = 0;
  Exposition out_;
  std::unordered_map<std::string, std::size_t> index_;
  std::unordered_map<std::size_t, bool> help_seen_;
  std::unordered_map<std::size_t, bool> type_seen_;
  std::optional<std::size_t> current_;
};

bool matches(const Sample& s, const LabelMatch& match) {
  for (const auto& [k, v] : match) {
    const std::string* got = s.label(k);
    if (got == nullptr || *got != v) return false;
  }
  return true;
}

// Calls fn(sample) for every sample named `name` that matches.
template <class Fn>
void for_samples(const Exposition& e, std::string_view name, const LabelMatch& match, Fn&& fn) {
  for (const auto& f : e.families) {
    if (name.size() < f.name.size() || name.substr(0, f.name.size()) != f.name) continue;
    for (const auto& s : f.samples) {
      if (s.name == name && matches(s, match)) fn(s);
    }
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------

std::string_view to_string(MetricType t) {
  switch (t) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
    case MetricType::kSummary:
      return "summary";
    case MetricType::kUntyped:
      break;
  }
  return "untyped";
}

const std::string* Sample::label(std::string_view key) const {
  for (const auto& [k, v] : labels) {
    if (k == key) return &v;
  }
  return nullptr;
}

const Family* Exposition::family(std::string_view name) const {
  for (const auto& f : families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::size_t Exposition::sample_count() const {
  std::size_t n = 0;
  for (const auto& f : families) n += f.samples.size();
  return n;
}

ParseError::ParseError(std::size_t line, const std::string& message)
    : std::runtime_error(fmt::format("line {}: {}", line, message)), line_(line) {}

Exposition parse_exposition(std::string_view text) { return Parser(text).run(); }

std::optional<Exposition> try_parse_exposition(std::string_view text, std::string* error) {
  try {
    return parse_exposition(text);
  } catch (const ParseError& e) {
    if (error != nullptr) *error = e.what();
    return std::nullopt;
  }
}

// ---------------------------------------------------------------------------------------------

std::optional<double> sum_samples(const Exposition& e, std::string_view sample_name, const LabelMatch& match) {
  std::optional<double> total;
  for_samples(e, sample_name, match, [&](const Sample& s) {
    if (std::isnan(s.value)) return;
    total = total.value_or(0.0) + s.value;
  });
  return total;
}

std::optional<double> mean_samples(const Exposition& e, std::string_view sample_name, const LabelMatch& match) {
  double total = 0;
  std::size_t n = 0;
  for_samples(e, sample_name, match, [&](const Sample& s) {
    if (std::isnan(s.value)) return;
    total += s.value;
    ++n;
  });
  if (n == 0) return std::nullopt;
  return total / static_cast<double>(n);
}

std::optional<Histogram> histogram(const Exposition& e, std::string_view name, const LabelMatch& match) {
  std::map<double, double> buckets;
  const std::string bucket_name = std::string(name) + "_bucket";
  for_samples(e, bucket_name, match, [&](const Sample& s) {
    const std::string* le = s.label("le");
    if (le == nullptr) return;
    const auto bound = parse_float(*le);
    if (!bound || std::isnan(*bound) || std::isnan(s.value)) return;
    buckets[*bound] += s.value;
  });
  if (buckets.empty()) return std::nullopt;
  Histogram h;
  for (const auto& [le, c] : buckets) {
    h.le.push_back(le);
    h.cumulative.push_back(c);
  }
  const auto count = sum_samples(e, std::string(name) + "_count", match);
  h.sum = sum_samples(e, std::string(name) + "_sum", match).value_or(0.0);
  if (!std::isinf(h.le.back())) {
    h.le.push_back(kInf);
    h.cumulative.push_back(count.value_or(h.cumulative.back()));
  }
  h.count = count.value_or(h.cumulative.back());
  return h;
}

std::optional<HistogramDelta> histogram_delta(const Histogram& before, const Histogram& after) {
  if (before.le != after.le) return std::nullopt;
  HistogramDelta d;
  d.hist.le = after.le;
  d.hist.cumulative.resize(after.cumulative.size());
  bool reset = after.count < before.count;
  for (std::size_t i = 0; i < after.cumulative.size(); ++i) {
    d.hist.cumulative[i] = after.cumulative[i] - before.cumulative[i];
    if (d.hist.cumulative[i] < 0) reset = true;
  }
  if (reset) {
    d.hist = after;
    d.reset = true;
    return d;
  }
  d.hist.sum = after.sum - before.sum;
  d.hist.count = after.count - before.count;
  return d;
}

double histogram_quantile(double q, const Histogram& h) {
  if (std::isnan(q)) return kNaN;
  if (q < 0) return -kInf;
  if (q > 1) return kInf;
  const std::size_t n = h.le.size();
  if (n < 2 || h.cumulative.size() != n || !std::isinf(h.le.back()) || h.le.back() < 0) return kNaN;
  // Cumulative counts must not go down (they can, slightly, in a delta of scrapes taken while
  // observations land): Prometheus makes them monotonic the same way.
  std::vector<double> cum(h.cumulative);
  for (std::size_t i = 1; i < n; ++i) cum[i] = std::max(cum[i], cum[i - 1]);
  const double observations = cum.back();
  if (!(observations > 0)) return kNaN;
  double rank = q * observations;
  const auto b = static_cast<std::size_t>(std::lower_bound(cum.begin(), cum.end(), rank) - cum.begin());
  if (b >= n - 1) return h.le[n - 2];
  if (b == 0 && h.le[0] <= 0) return h.le[0];
  double start = 0;
  const double end = h.le[b];
  double count = cum[b];
  if (b > 0) {
    start = h.le[b - 1];
    count -= cum[b - 1];
    rank -= cum[b - 1];
  }
  if (!(count > 0)) return start;
  return start + (end - start) * (rank / count);
}

std::optional<double> histogram_mean(const Histogram& h) {
  if (!(h.count > 0)) return std::nullopt;
  return h.sum / h.count;
}

// ---------------------------------------------------------------------------------------------

std::string_view to_string(ServerFlavor f) {
  switch (f) {
    case ServerFlavor::kVllm:
      return "vllm";
    case ServerFlavor::kSglang:
      return "sglang";
    case ServerFlavor::kLlmloadServer:
      return "llmload-server";
    case ServerFlavor::kUnknown:
      break;
  }
  return "unknown";
}

ServerFlavor detect_flavor(const Exposition& e, std::string_view hint) {
  bool vllm = false;
  bool sglang = false;
  bool llmload = false;
  for (const auto& f : e.families) {
    const std::string_view n = f.name;
    if (n.substr(0, 5) == "vllm:") vllm = true;
    if (n.substr(0, 7) == "sglang:") sglang = true;
    if (n.substr(0, 8) == "llmload:") llmload = true;
  }
  const bool hint_llmload = iequals(hint, "llmload") || iequals(hint, "llmload-server");
  if (vllm && (llmload || hint_llmload)) return ServerFlavor::kLlmloadServer;
  if (vllm && !sglang) return ServerFlavor::kVllm;
  if (sglang && !vllm) return ServerFlavor::kSglang;
  if (vllm && sglang) {
    if (iequals(hint, "sglang")) return ServerFlavor::kSglang;
    return ServerFlavor::kVllm;
  }
  return ServerFlavor::kUnknown;
}

namespace {

std::optional<double> first_sum(const Exposition& e, std::initializer_list<std::string_view> names) {
  for (auto n : names) {
    if (auto v = sum_samples(e, n)) return v;
  }
  return std::nullopt;
}

std::optional<double> first_mean(const Exposition& e, std::initializer_list<std::string_view> names) {
  for (auto n : names) {
    if (auto v = mean_samples(e, n)) return v;
  }
  return std::nullopt;
}

}  // namespace

StandardValues standard_values(const Exposition& e) {
  StandardValues v;
  v.running = first_sum(e, {"vllm:num_requests_running", "sglang:num_running_reqs"});
  v.waiting = first_sum(e, {"vllm:num_requests_waiting", "sglang:num_queue_reqs"});
  v.kv_cache_usage = first_mean(e, {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"});
  v.preemptions = first_sum(e, {"vllm:num_preemptions_total", "sglang:num_retracted_requests_total"});
  v.prompt_tokens = first_sum(e, {"vllm:prompt_tokens_total", "sglang:prompt_tokens_total"});
  v.generation_tokens = first_sum(e, {"vllm:generation_tokens_total", "sglang:generation_tokens_total"});
  v.requests_finished = first_sum(e, {"vllm:request_success_total", "sglang:num_requests_total"});
  v.power_watts = first_sum(e, {"llmload:gpu_power_watts", "DCGM_FI_DEV_POWER_USAGE"});
  v.energy_joules = first_sum(e, {"llmload:gpu_energy_joules_total"});
  if (!v.energy_joules) {
    if (auto mj = first_sum(e, {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"})) v.energy_joules = *mj / 1000.0;
  }
  v.prefix_cache_hits = first_sum(e, {"vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"});
  v.prefix_cache_queries = first_sum(e, {"vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"});
  if (!v.prefix_cache_hits && !v.prefix_cache_queries) {
    // SGLang counts the prompt tokens it found cached among all its prompt tokens.
    if (auto cached = first_sum(e, {"sglang:cached_tokens_total"})) {
      v.prefix_cache_hits = cached;
      v.prefix_cache_queries = first_sum(e, {"sglang:prompt_tokens_total"});
    }
  }
  v.prefix_cache_hit_rate = first_mean(e, {"vllm:gpu_prefix_cache_hit_rate", "sglang:cache_hit_rate"});
  return v;
}

nlohmann::json to_json(const StandardValues& v) {
  return {
      {"running", num_or_null(v.running)},
      {"waiting", num_or_null(v.waiting)},
      {"kv_cache_usage", num_or_null(v.kv_cache_usage)},
      {"preemptions", num_or_null(v.preemptions)},
      {"prompt_tokens", num_or_null(v.prompt_tokens)},
      {"generation_tokens", num_or_null(v.generation_tokens)},
      {"requests_finished", num_or_null(v.requests_finished)},
      {"power_watts", num_or_null(v.power_watts)},
      {"energy_joules", num_or_null(v.energy_joules)},
      {"prefix_cache_hits", num_or_null(v.prefix_cache_hits)},
      {"prefix_cache_queries", num_or_null(v.prefix_cache_queries)},
      {"prefix_cache_hit_rate", num_or_null(v.prefix_cache_hit_rate)},
  };
}

const std::vector<std::string>& server_histogram_names(ServerHistogram which) {
  static const std::vector<std::string> ttft = {"vllm:time_to_first_token_seconds",
                                                "sglang:time_to_first_token_seconds"};
  static const std::vector<std::string> e2e = {"vllm:e2e_request_latency_seconds",
                                               "sglang:e2e_request_latency_seconds"};
  static const std::vector<std::string> queue = {"vllm:request_queue_time_seconds", "sglang:queue_time_seconds"};
  static const std::vector<std::string> itl = {"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds",
                                               "sglang:inter_token_latency_seconds"};
  switch (which) {
    case ServerHistogram::kTtft:
      return ttft;
    case ServerHistogram::kE2e:
      return e2e;
    case ServerHistogram::kQueue:
      return queue;
    case ServerHistogram::kItl:
      break;
  }
  return itl;
}

std::optional<std::pair<std::string, Histogram>> find_server_histogram(const Exposition& e, ServerHistogram which) {
  for (const auto& name : server_histogram_names(which)) {
    if (auto h = histogram(e, name)) return std::make_pair(name, std::move(*h));
  }
  return std::nullopt;
}

nlohmann::json histogram_delta_json(const Exposition* before, const Exposition& after, ServerHistogram which) {
  auto found = find_server_histogram(after, which);
  if (!found) return nullptr;
  const auto& [name, h_after] = *found;
  std::optional<Histogram> h_before;
  if (before != nullptr) h_before = histogram(*before, name);
  HistogramDelta d;
  if (h_before) {
    auto delta = histogram_delta(*h_before, h_after);
    if (!delta) return nullptr;
    d = std::move(*delta);
  } else {
    d.hist = h_after;  // no earlier snapshot: everything the server has seen
  }
  nlohmann::json j;
  j["metric"] = name;
  j["count"] = d.hist.count;
  const auto mean = histogram_mean(d.hist);
  j["mean_ms"] = mean ? num_or_null(round_to(*mean * 1e3, 1e-6)) : nlohmann::json(nullptr);
  for (auto [key, q] : {std::pair<const char*, double>{"p50_ms", 0.5}, {"p90_ms", 0.9}, {"p99_ms", 0.99}}) {
    const double v = histogram_quantile(q, d.hist);
    j[key] = std::isfinite(v) ? nlohmann::json(round_to(v * 1e3, 1e-6)) : nlohmann::json(nullptr);
  }
  j["reset"] = d.reset;
  if (!h_before) j["whole_server_life"] = true;
  nlohmann::json les = nlohmann::json::array();
  for (double le : d.hist.le) les.push_back(std::isinf(le) ? nlohmann::json("+Inf") : nlohmann::json(le));
  j["buckets"] = {{"le", les}, {"cumulative", d.hist.cumulative}};
  return j;
}

}  // namespace llmload::analysis::prom
