// hdr_interop_tool: our side of the interoperability tests with HdrHistogram Java and
// hdr-histogram-js (see run_java.sh / run_js.sh). Subcommands:
//
//   gen <values.txt> <out.hlog> <expected.json>
//       Deterministic value set (seeded lognormal latencies in us plus edge values), written as
//       a values file the other tools record themselves, as an .hlog, and as the summary JSON
//       our library computes from it.
//   read-hlog <file.hlog>              summary JSON of a log written by any tool, to stdout
//   compare <a.json> <b.json>          exit 1 (listing differences) unless the summaries agree
//   check-b64 <values.txt> <b64.txt> exact|decoded
//       Each line "<tag> <base64>" of the other tool's encoding of interval i must decode to our
//       histogram of interval i (and, for `exact`, equal our encoding byte for byte).
//   check-hgrm <file.hlog> <tag|-> <out.hgrm>
//       The percentile distribution HistogramLogProcessor printed (-outputValueUnitRatio 1)
//       must agree with our merge of that tag's intervals.
//
// Summary JSON: {"intervals":[{tag,start_ms,end_ms,count,min,max,mean,stddev,p50,...}],
// "tags":{tag:{...}}}; the untagged intervals use tag "".

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload/analysis/hdr_codec.hpp"
#include "llmload/analysis/hdr_histogram.hpp"
#include "llmload/analysis/hdr_log.hpp"

namespace {

using llmload::analysis::HdrHistogram;
using nlohmann::json;

constexpr double kStartTimeSec = 1700000000.0;
const char* const kPercentiles[] = {"50", "90", "99", "99.9", "99.99"};

struct Interval {
  std::string tag;  // "" for untagged
  double start_sec = 0;
  double length_sec = 0;
  std::vector<std::pair<std::int64_t, std::int64_t>> values;  // (value, count)
};

// splitmix64: a tiny deterministic generator, identical on every platform.
struct Rng {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }  // (0, 1)
  double normal() { return std::sqrt(-2 * std::log(uniform())) * std::cos(6.283185307179586 * uniform()); }
};

std::vector<Interval> generate(std::uint64_t seed) {
  struct Metric {
    const char* tag;
    double median_us, sigma;
    int n;
  };
  const Metric metrics[] = {
      {"ttft", 180'000, 0.7, 1500}, {"tpot", 25'000, 0.4, 1500}, {"e2e", 2'500'000, 0.9, 1000}, {"", 500, 1.5, 800}};
  const double lengths[] = {1.0, 1.007, 0.993};
  Rng rng{seed};
  std::vector<Interval> out;
  double start = 0;
  for (int i = 0; i < 3; ++i) {
    for (const Metric& m : metrics) {
      Interval iv{m.tag, start, lengths[i], {}};
      for (int k = 0; k < m.n; ++k) {
        const double v = std::round(m.median_us * std::exp(m.sigma * rng.normal()));
        iv.values.emplace_back(static_cast<std::int64_t>(std::min(v, 3.6e9)), 1);
      }
      out.push_back(std::move(iv));
    }
    start += lengths[i];
  }
  // Edge values: bucket boundaries, the extremes, large counts.
  for (const std::int64_t v : {0LL, 1LL, 2047LL, 2048LL, 2049LL, 4095LL, 4096LL, 1'000'000'007LL, 3'600'000'000LL}) {
    out[0].values.emplace_back(v, 1);
  }
  out[1].values.emplace_back(1, 100'000);
  out[2].values.emplace_back(3'599'999'999, 3);
  out[3].values.emplace_back(0, 5);
  out.push_back(Interval{"idle", start, 1.0, {}});  // an empty interval
  return out;
}

HdrHistogram histogram_of(const Interval& iv) {
  HdrHistogram h;
  for (const auto& [v, c] : iv.values) {
    if (!h.record(v, c)) throw std::runtime_error("value out of range: " + std::to_string(v));
  }
  return h;
}

void write_values(const std::string& path, const std::vector<Interval>& intervals) {
  std::ofstream out(path);
  out << "# I <tag or -> <start_sec> <length_sec>, then V <value> <count> lines\n";
  for (const Interval& iv : intervals) {
    out << "I " << (iv.tag.empty() ? "-" : iv.tag) << ' ' << llmload::analysis::format_fixed3(iv.start_sec) << ' '
        << llmload::analysis::format_fixed3(iv.length_sec) << '\n';
    for (const auto& [v, c] : iv.values) out << "V " << v << ' ' << c << '\n';
  }
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::vector<Interval> read_values(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<Interval> out;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string kind;
    ls >> kind;
    if (kind == "I") {
      Interval iv;
      ls >> iv.tag >> iv.start_sec >> iv.length_sec;
      if (iv.tag == "-") iv.tag.clear();
      out.push_back(std::move(iv));
    } else if (kind == "V" && !out.empty()) {
      std::int64_t v = 0, c = 0;
      ls >> v >> c;
      out.back().values.emplace_back(v, c);
    }
  }
  return out;
}

json summary_of(const HdrHistogram& h) {
  json j;
  j["count"] = h.total_count();
  j["min"] = h.min();
  j["max"] = h.max();
  j["mean"] = h.mean();
  j["stddev"] = h.stddev();
  for (const char* p : kPercentiles) j[std::string("p") + p] = h.value_at_percentile(std::stod(p));
  return j;
}

json summarize(const std::vector<std::pair<std::string, HdrHistogram>>& intervals) {
  json out;
  out["intervals"] = json::array();
  std::map<std::string, HdrHistogram> by_tag;
  for (const auto& [tag, h] : intervals) {
    json j = summary_of(h);
    j["tag"] = tag;
    j["start_ms"] = h.start_time_ms;
    j["end_ms"] = h.end_time_ms;
    out["intervals"].push_back(j);
    by_tag.try_emplace(tag).first->second.add(h);
  }
  out["tags"] = json::object();
  for (const auto& [tag, h] : by_tag) out["tags"][tag] = summary_of(h);
  return out;
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  return json::parse(in);
}

// Integers must be equal; mean/stddev to 1e-9 relative (summation order may differ between
// implementations); timestamps (*_ms) to 1 ms (Java keeps whole milliseconds).
void compare_values(const std::string& where, const json& a, const json& b, std::vector<std::string>& diffs) {
  if (a.is_object() && b.is_object()) {
    for (const auto& [k, v] : a.items()) {
      if (!b.contains(k)) {
        diffs.push_back(where + "/" + k + ": missing on the right");
      } else {
        compare_values(where + "/" + k, v, b[k], diffs);
      }
    }
    for (const auto& [k, v] : b.items()) {
      if (!a.contains(k)) diffs.push_back(where + "/" + k + ": missing on the left");
    }
    return;
  }
  if (a.is_array() && b.is_array()) {
    if (a.size() != b.size())
      diffs.push_back(where + ": " + std::to_string(a.size()) + " vs " + std::to_string(b.size()) + " entries");
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
      compare_values(where + "/" + std::to_string(i), a[i], b[i], diffs);
    return;
  }
  const bool is_ms = where.size() > 3 && where.substr(where.size() - 3) == "_ms";
  const bool is_moment = where.ends_with("/mean") || where.ends_with("/stddev");
  if (a.is_number() && b.is_number() && (is_ms || is_moment)) {
    const double x = a.get<double>(), y = b.get<double>();
    const double tol = is_ms ? 1.0 : 1e-9 * std::max(std::fabs(x), std::fabs(y));
    if (std::fabs(x - y) > tol) diffs.push_back(where + ": " + a.dump() + " vs " + b.dump());
    return;
  }
  if (a != b) diffs.push_back(where + ": " + a.dump() + " vs " + b.dump());
}

int cmd_gen(const std::vector<std::string>& args) {
  const std::vector<Interval> intervals = generate(20240601);
  write_values(args.at(0), intervals);
  std::ofstream hlog(args.at(1));
  llmload::analysis::HlogWriter w(hlog);
  w.write_header("llmload-interop", kStartTimeSec);
  w.write_base_time(kStartTimeSec);
  w.write_legend();
  std::vector<std::pair<std::string, HdrHistogram>> hs;
  for (const Interval& iv : intervals) {
    HdrHistogram h = histogram_of(iv);
    w.write_interval(h, iv.start_sec, iv.length_sec,
                     iv.tag.empty() ? std::nullopt : std::optional<std::string_view>(iv.tag));
    h.start_time_ms = (kStartTimeSec + iv.start_sec) * 1000;
    h.end_time_ms = (kStartTimeSec + iv.start_sec + iv.length_sec) * 1000;
    hs.emplace_back(iv.tag, std::move(h));
  }
  if (!hlog) throw std::runtime_error("cannot write " + args.at(1));
  std::ofstream(args.at(2)) << summarize(hs).dump(1) << '\n';
  return 0;
}

int cmd_read_hlog(const std::vector<std::string>& args) {
  std::ifstream in(args.at(0));
  if (!in) throw std::runtime_error("cannot read " + args.at(0));
  const auto file = llmload::analysis::read_hlog(in);
  std::vector<std::pair<std::string, HdrHistogram>> hs;
  for (const auto& iv : file.intervals) hs.emplace_back(iv.tag.value_or(""), iv.histogram);
  std::cout << summarize(hs).dump(1) << '\n';
  return 0;
}

int cmd_compare(const std::vector<std::string>& args) {
  std::vector<std::string> diffs;
  compare_values("", read_json(args.at(0)), read_json(args.at(1)), diffs);
  for (const auto& d : diffs) std::cerr << "DIFF " << d << '\n';
  if (diffs.empty()) std::cout << "summaries agree: " << args.at(0) << " == " << args.at(1) << '\n';
  return diffs.empty() ? 0 : 1;
}

int cmd_check_b64(const std::vector<std::string>& args) {
  const std::vector<Interval> intervals = read_values(args.at(0));
  const bool exact = args.at(2) == "exact";
  std::ifstream in(args.at(1));
  if (!in) throw std::runtime_error("cannot read " + args.at(1));
  std::string tag, b64;
  std::size_t i = 0;
  int failures = 0;
  for (; in >> tag >> b64; ++i) {
    if (i >= intervals.size()) throw std::runtime_error("more encodings than intervals");
    const HdrHistogram ours = histogram_of(intervals[i]);
    const HdrHistogram theirs = llmload::analysis::decode_base64(b64);
    if (!(theirs == ours)) {
      std::cerr << "interval " << i << " (" << tag << "): decoded counts differ from ours\n";
      ++failures;
    }
    if (exact && llmload::analysis::encode_base64(ours) != b64) {
      std::cerr << "interval " << i << " (" << tag << "): encoding differs\n  theirs " << b64 << "\n  ours   "
                << llmload::analysis::encode_base64(ours) << '\n';
      ++failures;
    }
  }
  if (i != intervals.size()) {
    std::cerr << "expected " << intervals.size() << " encodings, got " << i << '\n';
    ++failures;
  }
  if (failures == 0) std::cout << i << " encodings agree (" << args.at(2) << ")\n";
  return failures == 0 ? 0 : 1;
}

int cmd_check_hgrm(const std::vector<std::string>& args) {
  std::ifstream in(args.at(0));
  if (!in) throw std::runtime_error("cannot read " + args.at(0));
  const std::string tag = args.at(1) == "-" ? "" : args.at(1);
  HdrHistogram h;
  for (const auto& iv : llmload::analysis::read_hlog(in).intervals) {
    if (iv.tag.value_or("") == tag) h.add(iv.histogram);
  }
  std::ifstream hgrm(args.at(2));
  if (!hgrm) throw std::runtime_error("cannot read " + args.at(2));
  std::vector<std::string> errors;
  std::string line;
  int rows = 0;
  double last_level = -1;
  std::int64_t last_value = -1;
  bool saw_mean = false, saw_max = false;
  const auto total = static_cast<double>(h.total_count());
  while (std::getline(hgrm, line)) {
    double value = 0, level = 0, mean = 0, sd = 0;
    long long cum = 0, count = 0;
    char tail = 0;
    if (std::sscanf(line.c_str(), "#[Mean = %lf, StdDeviation = %lf%c", &mean, &sd, &tail) == 3) {
      saw_mean = true;
      if (llmload::analysis::format_fixed3(mean) != llmload::analysis::format_fixed3(h.mean()) ||
          llmload::analysis::format_fixed3(sd) != llmload::analysis::format_fixed3(h.stddev())) {
        errors.push_back("mean/stddev " + line + " vs ours " + std::to_string(h.mean()) + "/" +
                         std::to_string(h.stddev()));
      }
    } else if (std::sscanf(line.c_str(), "#[Max = %lf, Total count = %lld%c", &value, &count, &tail) == 3) {
      saw_max = true;
      if (static_cast<std::int64_t>(value) != h.max() || count != h.total_count()) {
        errors.push_back("max/total " + line + " vs ours " + std::to_string(h.max()) + "/" +
                         std::to_string(h.total_count()));
      }
    } else if (line[0] != '#' && std::sscanf(line.c_str(), "%lf %lf %lld", &value, &level, &cum) == 3) {
      ++rows;
      const auto v = static_cast<std::int64_t>(value);
      // The row's value is the first bucket whose cumulative share reaches the level.
      std::int64_t cum_ours = 0, cum_before = 0;
      h.for_each_recorded([&](std::int64_t bucket_value, std::int64_t c) {
        if (bucket_value <= v) cum_ours += c;
        if (bucket_value < v) cum_before += c;
      });
      const bool is_bucket = h.count_at_value(v) > 0 && h.highest_equivalent(v) == v;
      if (!is_bucket || cum_ours != cum || 100.0 * static_cast<double>(cum_ours) / total < 100.0 * level - 1e-7 ||
          100.0 * static_cast<double>(cum_before) / total >= 100.0 * level + 1e-7 || level < last_level ||
          v < last_value) {
        errors.push_back("row '" + line + "': ours cumulative " + std::to_string(cum_ours) + ", before " +
                         std::to_string(cum_before));
      }
      last_level = level;
      last_value = v;
    }
  }
  if (rows < 20) errors.push_back("only " + std::to_string(rows) + " percentile rows");
  if (last_value != h.max() || last_level != 1.0) errors.push_back("last row is not the maximum at percentile 1.0");
  if (!saw_mean || !saw_max) errors.push_back("footer lines missing");
  for (const auto& e : errors) std::cerr << "HGRM " << e << '\n';
  if (errors.empty()) {
    std::cout << rows << " .hgrm rows agree for tag '" << tag << "' (count " << h.total_count() << ", p99 "
              << h.value_at_percentile(99) << ")\n";
  }
  return errors.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> all(argv + 1, argv + argc);
  if (all.empty()) {
    std::cerr << "usage: hdr_interop_tool gen|read-hlog|compare|check-b64|check-hgrm ...\n";
    return 2;
  }
  const std::string cmd = all[0];
  const std::vector<std::string> args(all.begin() + 1, all.end());
  try {
    if (cmd == "gen") return cmd_gen(args);
    if (cmd == "read-hlog") return cmd_read_hlog(args);
    if (cmd == "compare") return cmd_compare(args);
    if (cmd == "check-b64") return cmd_check_b64(args);
    if (cmd == "check-hgrm") return cmd_check_hgrm(args);
    std::cerr << "unknown command " << cmd << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "hdr_interop_tool " << cmd << ": " << e.what() << '\n';
    return 1;
  }
}
