// The "custom" dataset: JSONL, one request a line, optionally timestamped.

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/structured_request.hpp"
#include "llmload/loadgen/workload/graded.hpp"
#include "llmload/loadgen/workload/sources.hpp"
#include "text_util.hpp"

namespace llmload {

namespace {

using json = nlohmann::json;

constexpr std::string_view kLineForm =
    "each line must be one JSON object like {\"prompt\": \"text\", \"output_tokens\": 128, \"timestamp\": 0.5} "
    "(output_tokens and timestamp optional; \"messages\": [{\"role\": \"user\", \"content\": \"text\"}] in place "
    "of \"prompt\"; graded rows add \"reference\", \"grader\" and \"subset\"; tool-call and structured-output "
    "rows add \"tools\", \"tool_choice\" and \"response_format\")";

struct CustomLine {
  std::string prompt;
  std::vector<ChatMessage> messages;
  std::string reference;
  std::string grader;
  std::string subset;
  std::int64_t output_tokens = 0;
  std::optional<double> timestamp;  // seconds
  std::int64_t line = 0;
  std::shared_ptr<const StructuredSpec> structured;  // the row's tools / response format
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

// "messages": a non-empty array of {"role", "content"} with non-empty strings; the prompt is the
// contents joined by newlines.
void read_custom_messages(const json& messages, const std::string& where, CustomLine& c) {
  if (!messages.is_array() || messages.empty()) {
    throw ConfigError(fmt::format("{}: \"messages\" must be a non-empty array of {{\"role\", \"content\"}} objects; {}",
                                  where, kLineForm));
  }
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const json& m = messages[i];
    ChatMessage msg;
    for (const char* key : {"role", "content"}) {
      const auto v = m.is_object() ? m.find(key) : m.end();
      if (!m.is_object() || v == m.end() || !v->is_string() || v->get_ref<const std::string&>().empty()) {
        throw ConfigError(fmt::format("{}: messages[{}] has no non-empty string \"{}\": each message is an object "
                                      "like {{\"role\": \"user\", \"content\": \"text\"}}", where, i, key));
      }
      (std::string_view(key) == "role" ? msg.role : msg.content) = v->get<std::string>();
    }
    if (!c.prompt.empty()) c.prompt += '\n';
    c.prompt += msg.content;
    c.messages.push_back(std::move(msg));
  }
}

// "prompt" or "messages", exactly one of them.
void read_custom_prompt(const json& j, const std::string& where, CustomLine& c) {
  const auto prompt = j.find("prompt");
  const auto messages = j.find("messages");
  if (prompt != j.end() && messages != j.end()) {
    throw ConfigError(fmt::format("{}: both \"prompt\" and \"messages\": give one of them", where));
  }
  if (messages != j.end()) return read_custom_messages(*messages, where, c);
  if (prompt == j.end() || !prompt->is_string() || prompt->get_ref<const std::string&>().empty()) {
    throw ConfigError(fmt::format("{}: \"prompt\" (or \"messages\") is missing, or \"prompt\" is not a non-empty "
                                  "string; {}", where, kLineForm));
  }
  c.prompt = prompt->get<std::string>();
}

// "reference", "grader" and "subset". `checked` holds the graders already found valid (a regex
// compiles once per file, not once per row).
void read_custom_grading(const json& j, const std::string& where, CustomLine& c, std::set<std::string>& checked) {
  if (const auto g = j.find("grader"); g != j.end()) {
    if (!g->is_string()) throw ConfigError(fmt::format("{}: \"grader\" must be a string: {}", where, kGraderForms));
    c.grader = g->get<std::string>();
    if (!checked.count(c.grader)) {
      if (const std::string problem = grader_problem(c.grader); !problem.empty()) {
        throw ConfigError(fmt::format("{}: {}", where, problem));
      }
      checked.insert(c.grader);
    }
  }
  const auto ref = j.find("reference");
  if (ref != j.end() && c.grader.empty()) c.grader = "normalized";
  if (ref != j.end() && (ref->is_object() || ref->is_array())) {
    if (c.grader != "json") {
      throw ConfigError(fmt::format("{}: a JSON {} as \"reference\" is for the json grader (a JSON Schema): add "
                                    "\"grader\": \"json\", or give the reference as a string",
                                    where, ref->is_object() ? "object" : "array"));
    }
    c.reference = ref->dump();
  } else if (ref != j.end()) {
    if (!ref->is_string() || ref->get_ref<const std::string&>().empty()) {
      throw ConfigError(fmt::format("{}: \"reference\" must be a non-empty string (with the json grader also a JSON "
                                    "object or array), got {}; write a number as a string, e.g. \"42\"",
                                    where, ref->dump()));
    }
    c.reference = ref->get<std::string>();
  } else if (!c.grader.empty() && c.grader != "json") {
    throw ConfigError(fmt::format("{}: grader \"{}\" needs a \"reference\" to compare the output with (only "
                                  "\"json\" may go without one: it then checks that the output is valid JSON)",
                                  where, c.grader));
  }
  if (const auto subset = j.find("subset"); subset != j.end()) {
    if (!subset->is_string()) {
      throw ConfigError(fmt::format("{}: \"subset\" must be a string (a name to group the row's accuracy by), got {}",
                                    where, subset->dump()));
    }
    c.subset = subset->get<std::string>();
  }
}

// "tools" (with an optional "tool_choice", default required) and "response_format" (an OpenAI
// response_format or a bare JSON Schema): the row's own tool-call or structured-output request.
void read_custom_structured(const json& j, const std::string& where, CustomLine& c) {
  const auto tools = j.find("tools");
  const auto format = j.find("response_format");
  if (tools == j.end() && format == j.end()) {
    if (j.contains("tool_choice")) throw ConfigError(fmt::format("{}: \"tool_choice\" without \"tools\"", where));
    return;
  }
  auto spec = std::make_shared<StructuredSpec>();
  if (tools != j.end()) {
    spec->tools = parse_tools(*tools, where + ": \"tools\"");
    if (const auto choice = j.find("tool_choice"); choice != j.end()) {
      spec->tool_choice = parse_tool_choice(*choice, spec->tools, where + ": \"tool_choice\"");
    }
  }
  if (format != j.end()) parse_response_format(*format, *spec, where + ": \"response_format\"");
  if (spec->has_tools() || spec->has_format()) c.structured = std::move(spec);
}

// One line's object → CustomLine; `where` is "file:line" for the errors.
CustomLine parse_custom_line(std::string_view text, const std::string& where, std::int64_t default_output,
                             std::set<std::string>& checked_graders) {
  const json j = workload_detail::parse_json_line(text, where);
  if (j.is_discarded() || !j.is_object()) {
    throw ConfigError(fmt::format("{}: not a JSON object; {}", where, kLineForm));
  }
  CustomLine c;
  read_custom_prompt(j, where, c);
  read_custom_grading(j, where, c, checked_graders);
  read_custom_structured(j, where, c);
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
  std::set<std::string> checked_graders;
  workload_detail::for_each_line(content, [&](std::int64_t no, std::string_view line) {
    if (workload_detail::trim(line).empty()) return true;
    CustomLine c = parse_custom_line(line, fmt::format("{}:{}", path, no), default_output, checked_graders);
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

// The graded rows' counts for the description (added only when a row is graded or has messages,
// so descriptions of plain files stay as they were).
void describe_custom_grading(const std::vector<WorkItem>& items, nlohmann::json& d) {
  std::int64_t graded = 0;
  std::int64_t with_messages = 0;
  std::map<std::string, std::int64_t> graders;
  std::map<std::string, std::int64_t> subsets;
  for (const auto& w : items) {
    if (!w.grader.empty()) {
      ++graded;
      ++graders[w.grader];
    }
    if (!w.subset.empty()) ++subsets[w.subset];
    if (!w.messages.empty()) ++with_messages;
  }
  if (graded > 0) {
    d["graded"] = graded;
    d["graders"] = graders;
  }
  if (!subsets.empty()) d["subsets"] = subsets;
  if (with_messages > 0) {
    d["messages_rows"] = with_messages;
    d["messages_prompt"] = "the messages' contents joined by newlines (counted for input tokens; chat requests "
                           "send the messages)";
  }
}

WorkItem custom_item(const CustomLine& c, const TokenModel& tokens) {
  WorkItem w;
  w.prompt = c.prompt;
  w.input_tokens = tokens.overhead + estimate_text_tokens(c.prompt);
  w.output_tokens = c.output_tokens;
  w.messages = c.messages;
  w.reference = c.reference;
  w.grader = c.grader;
  w.subset = c.subset;
  w.structured = c.structured;
  return w;
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
    WorkItem w = custom_item(c, tokens);
    if (timed) {
      const double offset_s = (*c.timestamp - t0) / cfg.time_scale;
      span_s = std::max(span_s, offset_s);
      w.arrival = Nanos(std::llround(offset_s * 1e9));
    }
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
  describe_custom_grading(items, d);
  return std::make_unique<CustomWorkload>(std::move(items), timed, std::move(d));
}

}  // namespace llmload
