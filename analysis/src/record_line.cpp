#include "llmload/analysis/record_line.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace llmload::analysis {
namespace {

using nlohmann::json;

/// The fields of one line: each key with its value's text, put in key order at the end (nlohmann
/// keeps an object's keys sorted, and the line must read as its dump would).
class LineFields {
 public:
  // Room for a usual line's fields (about 40) and values at once, not grown step by step.
  LineFields() {
    fields_.reserve(64);
    values_.reserve(768);
  }

  void boolean(std::string_view key, bool v) { add(key, v ? std::string_view("true") : std::string_view("false")); }
  void null(std::string_view key) { add(key, "null"); }

  void integer(std::string_view key, std::int64_t v) {
    std::array<char, 24> buf{};
    auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
    add(key, std::string_view(buf.data(), static_cast<std::size_t>(end - buf.data())));
  }
  void unsigned_integer(std::string_view key, std::uint64_t v) {
    std::array<char, 24> buf{};
    auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
    add(key, std::string_view(buf.data(), static_cast<std::size_t>(end - buf.data())));
  }
  void number(std::string_view key, double v) {
    std::array<char, 64> buf{};
    add(key, number_text(buf, v));
  }
  /// An object of numbers, its keys given in sorted order (how nlohmann prints an object).
  void number_object(std::string_view key, std::initializer_list<std::pair<std::string_view, std::optional<double>>> members) {
    const std::size_t begin = values_.size();
    values_ += '{';
    bool first = true;
    for (const auto& [name, v] : members) {
      if (!first) values_ += ',';
      first = false;
      values_ += '"';
      values_ += name;
      values_ += "\":";
      std::array<char, 64> buf{};
      values_ += v ? number_text(buf, *v) : std::string_view("null");
    }
    values_ += '}';
    fields_.push_back({key, begin, values_.size(), key_prefix(key)});
  }
  void ms(std::string_view key, const std::optional<Nanos>& v) {
    if (v) {
      number(key, static_cast<double>(v->count()) / 1e6);
    } else {
      null(key);
    }
  }
  void text(std::string_view key, std::string_view s) {
    if (plain(s)) {
      const std::size_t begin = values_.size();
      values_ += '"';
      values_ += s;
      values_ += '"';
      fields_.push_back({key, begin, values_.size(), key_prefix(key)});
    } else {
      value(key, json(std::string(s)));
    }
  }
  void optional_text(std::string_view key, const std::optional<std::string>& s) {
    if (s) {
      text(key, *s);
    } else {
      null(key);
    }
  }
  /// A value only a JSON tree says simply (the rare nested fields): its dump.
  void value(std::string_view key, const json& v) { add(key, v.dump(-1, ' ', false, json::error_handler_t::replace)); }

  void write(std::string& out) {
    // Keys mostly differ in their first 8 bytes: those are compared as one number, the whole
    // keys only when they tie (a memcmp call per comparison was a few percent of a short
    // request's CPU).
    std::sort(fields_.begin(), fields_.end(), [](const Field& a, const Field& b) {
      if (a.prefix != b.prefix) return a.prefix < b.prefix;
      return a.key < b.key;
    });
    out += '{';
    bool first = true;
    for (const auto& f : fields_) {
      if (!first) out += ',';
      first = false;
      out += '"';
      out += f.key;  // the keys are this file's own names: nothing to escape
      out += "\":";
      out.append(values_, f.begin, f.end - f.begin);
    }
    out += '}';
  }

 private:
  struct Field {
    std::string_view key;
    std::size_t begin;
    std::size_t end;
    std::uint64_t prefix;  // the key's first 8 bytes, big-endian, zero-padded: orders as the key does
  };

  static std::uint64_t key_prefix(std::string_view key) {
    std::uint64_t p = 0;
    for (std::size_t i = 0; i < 8; ++i) {
      p = (p << 8) | (i < key.size() ? static_cast<unsigned char>(key[i]) : 0U);
    }
    return p;
  }

  /// A double as nlohmann's serializer writes it (null for a NaN or an infinity).
  static std::string_view number_text(std::array<char, 64>& buf, double v) {
    if (!std::isfinite(v)) return "null";
    const char* end = nlohmann::detail::to_chars(buf.data(), buf.data() + buf.size(), v);
    return {buf.data(), static_cast<std::size_t>(end - buf.data())};
  }

  /// Printable ASCII with no quote or backslash: written as it is (anything else goes through
  /// nlohmann's escaping, which also replaces invalid UTF-8).
  static bool plain(std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) {
      const auto u = static_cast<unsigned char>(c);
      return u >= 0x20 && u < 0x7f && c != '"' && c != '\\';
    });
  }
  void add(std::string_view key, std::string_view text) {
    const std::size_t begin = values_.size();
    values_ += text;
    fields_.push_back({key, begin, values_.size(), key_prefix(key)});
  }

  std::vector<Field> fields_;
  std::string values_;
};

/// The fields every record has, and those it has when it went through a session, a stage, the
/// server's ground truth, a grader or an outputs-keeping run (docs/artifact.md, requests.jsonl).
void record_fields(LineFields& f, const RequestRecord& r) {
  f.unsigned_integer("index", r.index);
  f.boolean("warmup", r.warmup);
  f.boolean("in_window", r.in_window);
  f.boolean("ok", r.ok());
  f.ms("t_intended_ms", r.t_intended);
  f.ms("t_send_ms", r.t_send);
  f.ms("t_headers_ms", r.t_headers);
  f.ms("t_first_ms", r.t_first);
  f.ms("t_first_output_ms", r.t_first_output);
  f.ms("t_last_ms", r.t_last);
  f.ms("t_done_ms", r.t_done);
  f.ms("ttft_ms", r.ttft());
  f.ms("tpot_ms", r.tpot());
  f.ms("e2e_ms", r.e2e());
  f.ms("ttft_rt_ms", r.ttft_rt());
  f.ms("ttfo_ms", r.ttfo());
  f.ms("ttfo_rt_ms", r.ttfo_rt());
  f.ms("e2e_rt_ms", r.e2e_rt());
  f.ms("schedule_lag_ms", r.schedule_lag());
  f.integer("requested_input_tokens", r.requested_input_tokens);
  f.integer("requested_output_tokens", r.requested_output_tokens);
  f.integer("input_tokens", r.input_tokens);
  f.integer("output_tokens", r.output_tokens);
  f.boolean("tokens_from_usage", r.tokens_from_usage);
  f.boolean("tokens_from_tokenizer", r.tokens_from_tokenizer);
  f.text("output_tokens_source", r.tokens_from_usage ? "usage" : (r.tokens_from_tokenizer ? "tokenizer" : "events"));
  if (r.client_output_tokens) {
    f.integer("client_output_tokens", *r.client_output_tokens);
  } else {
    f.null("client_output_tokens");
  }
  f.integer("output_events", r.output_events);
  if (r.cached_tokens) {
    f.integer("cached_tokens", *r.cached_tokens);
  } else {
    f.null("cached_tokens");
  }
  if (!r.reasoning_tokens_source.empty()) {
    f.integer("reasoning_tokens", r.reasoning_tokens);
    f.text("reasoning_tokens_source", r.reasoning_tokens_source);
  }
  if (!r.model.empty()) f.text("model", r.model);
  f.optional_text("finish_reason", r.finish_reason);
  f.boolean("ended_early", r.ended_early);
  if (r.session >= 0) {
    f.integer("session", r.session);
    f.integer("turn", r.turn);
  }
  if (r.stage >= 0) f.integer("stage", r.stage);
  if (r.server_first_token_s) {
    f.number_object("server", {{"first_token_s", r.server_first_token_s},
                               {"last_token_s", r.server_last_token_s},
                               {"queue_s", r.server_queue_s}});
  }
  f.unsigned_integer("item", r.item);
  f.integer("http_status", r.http_status);
  f.text("error_class", to_string(r.error));
  if (r.error_message.empty()) {
    f.null("error");
  } else {
    f.text("error", r.error_message);
  }
}

/// Graded accuracy, kept outputs, tool calls and structured output: present when the run asked.
void outcome_fields(LineFields& f, const RequestRecord& r) {
  if (!r.grader.empty()) {
    f.text("grader", r.grader);
    f.text("grade", to_string(r.grade));
    if (r.grade == Grade::kNone || r.grade == Grade::kUnparsed) {
      f.null("extracted");
    } else {
      f.text("extracted", r.extracted);
    }
    if (!r.subset.empty()) f.text("subset", r.subset);
  }
  if (!r.reference.empty()) f.text("reference", r.reference);
  if (r.output_text) f.text("output_text", *r.output_text);
  if (!r.server_tokens_from.empty()) {
    json tokens = json::array();
    for (const auto& t : r.server_tokens) {
      if (r.server_tokens_from == "token_ids") {
        tokens.push_back(json::parse(t, nullptr, false));  // the ids as numbers, as the server sent them
      } else {
        tokens.push_back(t);
      }
    }
    f.value("server_tokens", {{"from", r.server_tokens_from}, {"tokens", std::move(tokens)}});
  }
  if (!r.structured.empty()) {
    f.text("structured", r.structured);
    if (r.structured_verdict.empty()) {
      f.null("structured_verdict");
    } else {
      f.text("structured_verdict", r.structured_verdict);
    }
    if (!r.structured_error.empty()) f.text("structured_error", r.structured_error);
  }
  if (!r.tool_call_names.empty()) {
    json calls = json::array();
    for (std::size_t i = 0; i < r.tool_call_names.size(); ++i) {
      calls.push_back({{"name", r.tool_call_names[i]},
                       {"arguments", i < r.tool_call_arguments.size() ? r.tool_call_arguments[i] : std::string()}});
    }
    f.value("tool_calls", calls);
  }
}

}  // namespace

void append_record_line(std::string& out, const RequestRecord& r, std::span<const ExtraLineField> extra) {
  LineFields f;
  record_fields(f, r);
  outcome_fields(f, r);
  for (const auto& e : extra) f.integer(e.key, e.value);
  f.write(out);
}

std::string record_line(const RequestRecord& r, std::span<const ExtraLineField> extra) {
  std::string out;
  out.reserve(1024);
  append_record_line(out, r, extra);
  return out;
}

}  // namespace llmload::analysis
