#include "decode_json.hpp"

// JSON helpers shared by the stream decoders (stream_decoder.cpp, responses_decoder.cpp,
// anthropic_decoder.cpp): bounded parsing, typed field access, error bodies, excerpts.

namespace llmload::detail {

using nlohmann::json;

namespace {
// OpenAI payloads nest a handful of levels. Deeper JSON is rejected before parsing: nlohmann's
// parser is iterative, but dump() (used for error values) recurses once per level, so a server
// sending {"error":[[[[...]]]]} a few hundred thousand levels deep would overflow the stack.
constexpr int kMaxJsonDepth = 64;

bool nested_too_deep(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}


}  // namespace

// Parses a JSON payload; discarded (as on a syntax error) when nested too deep.
json parse_payload(std::string_view text) {
  if (nested_too_deep(text)) return json(json::value_t::discarded);
  return json::parse(text, nullptr, /*allow_exceptions=*/false);
}


std::optional<double> number_field(const json& obj, const char* key) {
  auto f = obj.find(key);
  if (f == obj.end() || !f->is_number()) return std::nullopt;
  const double v = f->get<double>();
  if (!std::isfinite(v) || v < 0) return std::nullopt;
  return v;
}

// llmload-server's ground truth: {"llmload": {"queue_s", "first_token_s", "last_token_s", ...}}.
std::optional<ServerTiming> read_server_timing(const json& j) {
  auto it = j.find("llmload");
  if (it == j.end() || !it->is_object()) return std::nullopt;
  ServerTiming t;
  t.queue_s = number_field(*it, "queue_s");
  t.first_token_s = number_field(*it, "first_token_s");
  t.last_token_s = number_field(*it, "last_token_s");
  if (!t.first_token_s) return std::nullopt;
  return t;
}

std::optional<std::int64_t> count_field(const json& obj, const char* key, bool& valid) {
  auto f = obj.find(key);
  if (f == obj.end() || !f->is_number_integer()) return std::nullopt;
  if (f->is_number_unsigned() ? f->get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxUsageCount)
                              : (f->get<std::int64_t>() < 0 || f->get<std::int64_t>() > kMaxUsageCount)) {
    valid = false;
    return std::nullopt;
  }
  return f->get<std::int64_t>();
}

const std::string* string_field(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return nullptr;
  return &it->get_ref<const std::string&>();
}

bool nonempty_string(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() && !it->get_ref<const std::string&>().empty();
}

std::string error_text(const json& err) {
  if (err.is_object()) {
    auto m = err.find("message");
    if (m != err.end() && m->is_string()) return m->get<std::string>();
    return err.dump(-1, ' ', true, json::error_handler_t::replace);
  }
  if (err.is_string()) return err.get<std::string>();
  return err.dump(-1, ' ', true, json::error_handler_t::replace);
}

// A string member of `j`, or "".
std::string string_member(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// FastAPI's validation errors: {"detail": [{"loc": ["body", "max_tokens"], "msg": "..."}]}.
std::string detail_text(const json& d) {
  if (d.is_string()) return d.get<std::string>();
  if (d.is_object()) return error_text(d);
  if (!d.is_array()) return d.dump(-1, ' ', true, json::error_handler_t::replace);
  std::string out;
  for (const auto& item : d) {
    if (!out.empty()) out += "; ";
    if (!item.is_object()) {
      out += item.dump(-1, ' ', true, json::error_handler_t::replace);
      continue;
    }
    std::string loc;
    if (auto l = item.find("loc"); l != item.end() && l->is_array()) {
      for (const auto& part : *l) {
        if (!loc.empty()) loc += '.';
        loc += part.is_string() ? part.get<std::string>() : part.dump();
      }
    }
    const std::string msg = string_member(item, "msg");
    out += loc.empty() ? msg : loc + ": " + msg;
  }
  return out;
}

// The message of an error body that is a JSON object; "" when it has none of the known members.
std::string error_body_text(const json& j) {
  std::string text;
  if (auto e = j.find("error"); e != j.end() && !e->is_null()) {
    text = error_text(*e);
    if (e->is_object()) {
      // {"error": {"message": .., "type": .., "code": ..}}: the type and code say which error.
      std::string kind = string_member(*e, "type");
      if (auto c = e->find("code"); c != e->end() && c->is_string()) {  // a number repeats the status
        kind += (kind.empty() ? "" : ", ") + c->get<std::string>();
      }
      if (!kind.empty() && e->contains("message")) text += " (" + kind + ")";
    }
  }
  // {"error": "Bad Request", "message": "max_tokens must be ..."}: both say something.
  const std::string message = string_member(j, "message");
  if (!message.empty() && message != text) text = text.empty() ? message : text + ": " + message;
  if (auto d = j.find("detail"); d != j.end() && !d->is_null() && text.empty()) text = detail_text(*d);
  return text;
}

std::string excerpt(std::string_view s, std::size_t max_len) {
  std::string out;
  for (char ch : s.substr(0, max_len)) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '\n' || c == '\r' || c == '\t') {
      out.push_back(' ');
    } else if (c < 0x20 || c == 0x7f) {
      out += "?";
    } else {
      out.push_back(ch);
    }
  }
  if (s.size() > max_len) out += "...";
  return out;
}

}  // namespace llmload::detail
