// The "custom" dataset: JSONL, one request a line, optionally timestamped.

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/workload/sources.hpp"
#include "text_util.hpp"

namespace llmload {

namespace {

using json = nlohmann::json;

constexpr std::string_view kLineForm =
    "each line must be one JSON object like {\"prompt\": \"text\", \"output_tokens\": 128, \"timestamp\": 0.5} "
    "(output_tokens and timestamp optional)";

struct CustomLine {
  std::string prompt;
  std::int64_t output_tokens = 0;
  std::optional<double> timestamp;  // seconds
  std::int64_t line = 0;
};

class CustomWorkload final : public Workload {
 public:
  CustomWorkload(std::vector<WorkItem> items, bool timed, nlohmann::json description)
      : items_(std::move(items)), timed_(timed), description_(std::move(description)) {}
  std::optional<std::uint64_t> size() const override { return items_.size(); }
  WorkItem item(std::uint64_t index) const override { return items_.at(index); }
  bool timed() const override { return timed_; }
  nlohmann::json describe() const override { return description_; }

 private:
  std::vector<WorkItem> items_;
  bool timed_;
  nlohmann::json description_;
};

// One line's object → CustomLine; `where` is "file:line" for the errors.
CustomLine parse_custom_line(std::string_view text, const std::string& where, std::int64_t default_output) {
  const json j = workload_detail::parse_json_line(text, where);
  if (j.is_discarded() || !j.is_object()) {
    throw ConfigError(fmt::format("{}: not a JSON object; {}", where, kLineForm));
  }
  CustomLine c;
  const auto prompt = j.find("prompt");
  if (prompt == j.end() || !prompt->is_string() || prompt->get_ref<const std::string&>().empty()) {
    throw ConfigError(fmt::format("{}: \"prompt\" is missing or not a non-empty string; {}", where, kLineForm));
  }
  c.prompt = prompt->get<std::string>();
  c.output_tokens = default_output;
  if (const auto out = j.find("output_tokens"); out != j.end()) {
    if (!out->is_number_integer() || out->get<std::int64_t>() < 1 || out->get<std::int64_t>() > kMaxLength) {
      throw ConfigError(fmt::format("{}: \"output_tokens\" must be an integer in [1, {}], got {}; {}", where,
                                    kMaxLength, out->dump(), kLineForm));
    }
    c.output_tokens = out->get<std::int64_t>();
  }
  if (const auto ts = j.find("timestamp"); ts != j.end()) {
    if (!ts->is_number() || !std::isfinite(ts->get<double>())) {
      throw ConfigError(fmt::format("{}: \"timestamp\" must be a number of seconds, got {}; {}", where, ts->dump(),
                                    kLineForm));
    }
    c.timestamp = ts->get<double>();
  }
  if (c.output_tokens < 1) {
    throw ConfigError(fmt::format("{}: no \"output_tokens\" and the default output length is {}: give "
                                  "\"output_tokens\" on the line or set the output length", where, default_output));
  }
  return c;
}

std::vector<CustomLine> read_custom_lines(const std::string& path, std::int64_t default_output,
                                          std::optional<std::uint64_t> max_items) {
  const std::string content = workload_detail::read_text_file(path, "custom dataset");
  std::vector<CustomLine> lines;
  std::int64_t first_line = 0;  // the first request's line, for the all-or-none timestamp rule
  workload_detail::for_each_line(content, [&](std::int64_t no, std::string_view line) {
    if (workload_detail::trim(line).empty()) return true;
    CustomLine c = parse_custom_line(line, fmt::format("{}:{}", path, no), default_output);
    c.line = no;
    if (lines.empty()) {
      first_line = no;
    } else if (c.timestamp.has_value() != lines.front().timestamp.has_value()) {
      throw ConfigError(fmt::format("{}:{}: {} \"timestamp\" but line {} {}: give every line a timestamp or none",
                                    path, no, c.timestamp ? "has a" : "has no", first_line,
                                    c.timestamp ? "does not" : "does"));
    }
    // Lines past max_items are still validated: a bad file fails at start-up, whatever the limit.
    if (!max_items || lines.size() < *max_items) lines.push_back(std::move(c));
    return true;
  });
  if (lines.empty()) {
    throw ConfigError(fmt::format("custom dataset \"{}\" has no requests{}; {}", path,
                                  max_items && *max_items == 0 ? " (the request limit is 0)" : "", kLineForm));
  }
  return lines;
}

}  // namespace

std::unique_ptr<Workload> make_custom_workload(const WorkloadConfig& cfg, std::int64_t output_tokens,
                                               std::optional<std::uint64_t> max_items, const TokenModel& tokens) {
  const std::string& path = cfg.dataset_path;
  if (path.empty()) throw ConfigError("dataset custom needs a file: set --dataset-path (dataset_path) to a JSONL file");
  const std::vector<CustomLine> lines = read_custom_lines(path, output_tokens, max_items);
  const bool timed = lines.front().timestamp.has_value();

  // Arrivals count from the earliest timestamp, so lines out of order never give negative offsets.
  double t0 = 0;
  if (timed) {
    t0 = std::numeric_limits<double>::infinity();
    for (const auto& c : lines) t0 = std::min(t0, *c.timestamp);
  }
  std::vector<WorkItem> items;
  items.reserve(lines.size());
  std::int64_t in_total = 0;
  std::int64_t out_total = 0;
  double span_s = 0;
  for (const auto& c : lines) {
    WorkItem w;
    w.input_tokens = tokens.overhead + estimate_text_tokens(c.prompt);
    w.output_tokens = c.output_tokens;
    if (timed) {
      const double offset_s = (*c.timestamp - t0) / cfg.time_scale;
      span_s = std::max(span_s, offset_s);
      w.arrival = Nanos(std::llround(offset_s * 1e9));
    }
    w.prompt = c.prompt;
    in_total += w.input_tokens;
    out_total += w.output_tokens;
    items.push_back(std::move(w));
  }

  nlohmann::json d;
  d["dataset"] = "custom";
  d["path"] = path;
  d["requests"] = items.size();
  d["max_items"] = max_items ? nlohmann::json(*max_items) : nlohmann::json(nullptr);
  d["order"] = "file order";
  d["timed"] = timed;
  if (timed) {
    d["time_scale"] = cfg.time_scale;
    d["arrivals"] = "(timestamp - earliest timestamp) / time_scale";
    d["replay_span_s"] = span_s;
  }
  d["input_tokens_total"] = in_total;
  d["output_tokens_total"] = out_total;
  d["lengths_estimated"] = true;
  d["token_estimate"] = fmt::format("prompt: ceil(UTF-8 bytes / 4) plus the token model's overhead ({}); output: "
                                    "\"output_tokens\" or the default {}", tokens.overhead, output_tokens);
  return std::make_unique<CustomWorkload>(std::move(items), timed, std::move(d));
}

}  // namespace llmload
