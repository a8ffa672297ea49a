#include "llmload/loadgen/structured_request.hpp"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "llmload/analysis/json_schema.hpp"
#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/prompt.hpp"

namespace llmload {

using nlohmann::json;

const ToolSpec* StructuredSpec::tool(const std::string& name) const {
  for (const auto& t : tools) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::vector<ToolSpec> builtin_tools() {
  return {
      {"get_weather", "Get the current weather for a city.",
       json::parse(R"({"type":"object","properties":{
         "city":{"type":"string","minLength":1,"maxLength":64,"description":"City name, e.g. Paris"},
         "unit":{"type":"string","enum":["celsius","fahrenheit"]},
         "days":{"type":"integer","minimum":1,"maximum":7}},
         "required":["city","unit"],"additionalProperties":false})")},
      {"search_flights", "Search flights between two airports on a date.",
       json::parse(R"({"type":"object","properties":{
         "origin":{"type":"string","minLength":3,"maxLength":3,"description":"IATA code"},
         "destination":{"type":"string","minLength":3,"maxLength":3,"description":"IATA code"},
         "date":{"type":"string","minLength":10,"maxLength":10,"description":"YYYY-MM-DD"},
         "passengers":{"type":"integer","minimum":1,"maximum":9},
         "cabin":{"type":"string","enum":["economy","premium","business","first"]}},
         "required":["origin","destination","date","passengers"],"additionalProperties":false})")},
      {"create_event", "Create a calendar event with attendees.",
       json::parse(R"({"type":"object","properties":{
         "title":{"type":"string","minLength":1,"maxLength":100},
         "start":{"type":"string","description":"ISO 8601 date-time"},
         "duration_minutes":{"type":"integer","minimum":5,"maximum":480},
         "attendees":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":8},
         "location":{"type":"object","properties":{"room":{"type":"string"},"floor":{"type":"integer","minimum":0}},
                     "required":["room"],"additionalProperties":false}},
         "required":["title","start","duration_minutes","attendees"],"additionalProperties":false})")},
      {"convert_units", "Convert a quantity from one unit to another.",
       json::parse(R"({"type":"object","properties":{
         "value":{"type":"number"},
         "from":{"type":"string","enum":["m","km","mi","ft","kg","lb"]},
         "to":{"type":"string","enum":["m","km","mi","ft","kg","lb"]}},
         "required":["value","from","to"],"additionalProperties":false})")},
  };
}

json builtin_schema() {
  return json::parse(R"({"type":"object","properties":{
    "name":{"type":"string","minLength":1,"maxLength":80},
    "category":{"type":"string","enum":["book","electronics","clothing","food","toy"]},
    "rating":{"type":"integer","minimum":1,"maximum":5},
    "price":{"type":"object","properties":{"amount":{"type":"number","minimum":0},
             "currency":{"type":"string","enum":["USD","EUR","GBP"]}},
             "required":["amount","currency"],"additionalProperties":false},
    "tags":{"type":"array","items":{"type":"string","maxLength":20},"maxItems":5},
    "in_stock":{"type":"boolean"}},
    "required":["name","category","rating","price","tags","in_stock"],"additionalProperties":false})");
}

namespace {

void check_schema(const json& schema, const std::string& where);

// One tool in any of the three APIs' forms.
ToolSpec parse_tool(const json& t, const std::string& where) {
  if (!t.is_object()) throw ConfigError(fmt::format("{}: a tool must be a JSON object, got {}", where, t.dump().substr(0, 80)));
  const json* def = &t;
  if (auto f = t.find("function"); f != t.end()) {
    if (!f->is_object()) throw ConfigError(fmt::format("{}: \"function\" must be an object", where));
    def = &*f;  // OpenAI chat: {"type":"function","function":{...}}
  } else if (auto type = t.find("type"); type != t.end() && (!type->is_string() || *type != "function")) {
    throw ConfigError(fmt::format("{}: only function tools are supported, got type {}", where, type->dump()));
  }
  ToolSpec s;
  auto name = def->find("name");
  if (name == def->end() || !name->is_string() || name->get<std::string>().empty()) {
    throw ConfigError(fmt::format("{}: a tool without a \"name\": give each tool a name (and \"parameters\", a JSON "
                                  "Schema of its arguments)", where));
  }
  s.name = name->get<std::string>();
  if (auto d = def->find("description"); d != def->end() && d->is_string()) s.description = d->get<std::string>();
  const json* params = nullptr;
  for (const char* key : {"parameters", "input_schema"}) {
    if (auto p = def->find(key); p != def->end()) params = &*p;
  }
  if (params != nullptr) {
    if (!params->is_object()) {
      throw ConfigError(fmt::format("{}: tool '{}': \"parameters\" must be a JSON Schema object", where, s.name));
    }
    check_schema(*params, fmt::format("{}: tool '{}'", where, s.name));
    s.parameters = *params;
  } else {
    s.parameters = json{{"type", "object"}, {"properties", json::object()}};
  }
  return s;
}

json read_json_file(const std::string& path, const std::string& flag) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw ConfigError(fmt::format("{} '{}': no such file; give a JSON file or 'builtin'", flag, path));
  }
  constexpr std::uintmax_t kMaxBytes = 16u << 20;
  if (std::filesystem::file_size(path, ec) > kMaxBytes) {
    throw ConfigError(fmt::format("{} '{}': over 16 MiB; give a smaller JSON file", flag, path));
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, false);
  if (j.is_discarded()) throw ConfigError(fmt::format("{} '{}': not valid JSON", flag, path));
  return j;
}

// Every "pattern" in a schema compiles (else each response would be judged against a schema the
// checker cannot use, and blamed on the server).
void check_patterns(const json& j, const std::string& where, int depth = 0) {
  if (depth > 64 || !(j.is_object() || j.is_array())) return;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (j.is_object() && it.key() == "pattern" && it->is_string()) {
      try {
        analysis::json_schema::cached_regex(it->get<std::string>());
      } catch (const std::exception& e) {
        throw ConfigError(fmt::format("{}: {}: fix the pattern (ECMAScript syntax)", where, e.what()));
      }
    }
    check_patterns(*it, where, depth + 1);
  }
}

// The schema's checks the client can run (analysis json_schema): an object or a boolean.
void check_schema(const json& schema, const std::string& where) {
  if (!schema.is_object() && !schema.is_boolean()) {
    throw ConfigError(fmt::format("{}: a JSON Schema must be an object, got {}", where, schema.dump().substr(0, 80)));
  }
  check_patterns(schema, where);
}

// A draw in [0, 1) from (seed, index, stream).
double unit_draw(std::uint64_t seed, std::uint64_t index, std::uint64_t stream) {
  const std::uint64_t h = mix_seed(mix_seed(seed ^ (stream * 0x9e3779b97f4a7c15ULL)) + index);
  return static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0);
}

}  // namespace

std::vector<ToolSpec> parse_tools(const json& j, const std::string& where) {
  if (!j.is_array() || j.empty()) {
    throw ConfigError(fmt::format("{}: tools must be a non-empty JSON array of function tools, e.g. "
                                  "[{{\"type\":\"function\",\"function\":{{\"name\":\"f\",\"parameters\":{{...}}}}}}]",
                                  where));
  }
  std::vector<ToolSpec> out;
  std::set<std::string> names;
  for (const auto& t : j) {
    out.push_back(parse_tool(t, where));
    if (!names.insert(out.back().name).second) {
      throw ConfigError(fmt::format("{}: two tools are named '{}': tool names must be unique", where, out.back().name));
    }
  }
  return out;
}

std::string parse_tool_choice(const json& j, const std::vector<ToolSpec>& tools, const std::string& where) {
  std::string choice;
  if (j.is_string()) {
    choice = j.get<std::string>();
  } else if (j.is_object()) {
    const json* f = j.contains("function") && j["function"].is_object() ? &j["function"] : &j;
    if (auto n = f->find("name"); n != f->end() && n->is_string()) choice = n->get<std::string>();
  }
  if (choice == "auto" || choice == "required" || choice == "none") return choice;
  for (const auto& t : tools) {
    if (t.name == choice) return choice;
  }
  std::string names;
  for (const auto& t : tools) names += (names.empty() ? "" : ", ") + t.name;
  throw ConfigError(fmt::format("{}: tool choice {} is none of auto, required, none or a tool's name ({})", where,
                                j.dump().substr(0, 80), names));
}

void parse_response_format(const json& j, StructuredSpec& spec, const std::string& where) {
  if (!j.is_object()) throw ConfigError(fmt::format("{}: a response format must be a JSON object", where));
  auto type = j.find("type");
  if (type != j.end() && type->is_string() && *type == "json_object") {
    spec.json_object = true;
    return;
  }
  if (type != j.end() && type->is_string() && *type == "json_schema") {
    auto js = j.find("json_schema");
    const json* holder = js != j.end() && js->is_object() ? &*js : &j;  // OpenAI chat nests it
    auto schema = holder->find("schema");
    if (schema == holder->end()) {
      throw ConfigError(fmt::format("{}: a json_schema response format needs \"json_schema\": {{\"name\", \"schema\"}}",
                                    where));
    }
    check_schema(*schema, where);
    spec.schema = *schema;
    if (auto n = holder->find("name"); n != holder->end() && n->is_string()) spec.schema_name = n->get<std::string>();
    return;
  }
  if (type != j.end() && type->is_string() && *type == "text") return;
  check_schema(j, where);  // a bare JSON Schema
  spec.schema = j;
}

std::vector<ToolSpec> load_tools(const std::string& source) {
  if (source == "builtin") return builtin_tools();
  return parse_tools(read_json_file(source, "--tools"), "--tools " + source);
}

json load_schema(const std::string& source) {
  if (source == "builtin") return builtin_schema();
  json j = read_json_file(source, "--json-schema");
  StructuredSpec s;
  parse_response_format(j, s, "--json-schema " + source);
  if (!s.schema) throw ConfigError(fmt::format("--json-schema {}: give a JSON Schema (or a json_schema response_format)", source));
  return *s.schema;
}

StructuredMix::StructuredMix(const StructuredConfig& cfg, std::uint64_t seed) : cfg_(cfg), seed_(seed) {
  for (const auto& [ratio, flag] : {std::pair{cfg.tool_ratio, "--tool-ratio"}, std::pair{cfg.structured_ratio, "--structured-output-ratio"}}) {
    if (!(ratio >= 0 && ratio <= 1)) throw ConfigError(fmt::format("bad {} {}: give a share in [0, 1]", flag, ratio));
  }
  StructuredSpec spec;
  if (!cfg.tools.empty()) {
    spec.tools = load_tools(cfg.tools);
    spec.tool_choice = parse_tool_choice(json(cfg.tool_choice), spec.tools, "--tool-choice");
  }
  if (!cfg.json_schema.empty()) spec.schema = load_schema(cfg.json_schema);
  if (spec.has_tools() && spec.has_format()) both_ = std::make_shared<StructuredSpec>(spec);
  if (spec.has_tools()) {
    StructuredSpec t = spec;
    t.schema.reset();
    tools_only_ = std::make_shared<StructuredSpec>(std::move(t));
  }
  if (spec.has_format()) {
    StructuredSpec f = spec;
    f.tools.clear();
    format_only_ = std::make_shared<StructuredSpec>(std::move(f));
  }
}

std::shared_ptr<const StructuredSpec> StructuredMix::pick(std::uint64_t index) const {
  const bool tools = tools_only_ && unit_draw(seed_, index, 1) < cfg_.tool_ratio;
  const bool format = format_only_ && unit_draw(seed_, index, 2) < cfg_.structured_ratio;
  if (tools && format) return both_;
  if (tools) return tools_only_;
  if (format) return format_only_;
  return nullptr;
}

json StructuredMix::describe() const {
  json d = json::object();
  if (tools_only_) {
    json names = json::array();
    for (const auto& t : tools_only_->tools) names.push_back(t.name);
    d["tools"] = {{"source", cfg_.tools}, {"names", names}, {"tool_choice", tools_only_->tool_choice},
                  {"ratio", cfg_.tool_ratio}};
  }
  if (format_only_) d["json_schema"] = {{"source", cfg_.json_schema}, {"ratio", cfg_.structured_ratio}};
  return d;
}

namespace {

json chat_tool_choice(const std::string& choice) {
  if (choice == "auto" || choice == "required" || choice == "none") return choice;
  return {{"type", "function"}, {"function", {{"name", choice}}}};
}

json responses_tool_choice(const std::string& choice) {
  if (choice == "auto" || choice == "required" || choice == "none") return choice;
  return {{"type", "function"}, {"name", choice}};
}

json anthropic_tool_choice(const std::string& choice) {
  if (choice == "auto" || choice == "none") return {{"type", choice}};
  if (choice == "required") return {{"type", "any"}};
  return {{"type", "tool"}, {"name", choice}};
}

void add_tools(json& body, ApiKind api, const StructuredSpec& spec) {
  json tools = json::array();
  for (const auto& t : spec.tools) {
    if (api == ApiKind::kChat) {
      tools.push_back({{"type", "function"},
                       {"function", {{"name", t.name}, {"description", t.description}, {"parameters", t.parameters}}}});
    } else if (api == ApiKind::kResponses) {
      tools.push_back({{"type", "function"}, {"name", t.name}, {"description", t.description}, {"parameters", t.parameters}});
    } else {
      tools.push_back({{"name", t.name}, {"description", t.description}, {"input_schema", t.parameters}});
    }
  }
  body["tools"] = std::move(tools);
  body["tool_choice"] = api == ApiKind::kChat        ? chat_tool_choice(spec.tool_choice)
                        : api == ApiKind::kResponses ? responses_tool_choice(spec.tool_choice)
                                                     : anthropic_tool_choice(spec.tool_choice);
}

void add_format(json& body, ApiKind api, const StructuredSpec& spec) {
  if (api == ApiKind::kSglang) {
    // SGLang's native /generate: the schema as a JSON string in the sampling params.
    body["sampling_params"]["json_schema"] = spec.schema ? spec.schema->dump() : std::string(R"({"type":"object"})");
    return;
  }
  if (api == ApiKind::kAnthropic) {
    const json schema = spec.schema.value_or(json{{"type", "object"}});
    body["output_config"] = {{"format", {{"type", "json_schema"}, {"schema", schema}}}};
    return;
  }
  if (api == ApiKind::kResponses) {
    body["text"] = {{"format", spec.schema ? json{{"type", "json_schema"}, {"name", spec.schema_name},
                                                  {"schema", *spec.schema}, {"strict", true}}
                                           : json{{"type", "json_object"}}}};
    return;
  }
  body["response_format"] = spec.schema ? json{{"type", "json_schema"},
                                               {"json_schema", {{"name", spec.schema_name}, {"schema", *spec.schema},
                                                                {"strict", true}}}}
                                        : json{{"type", "json_object"}};
}

}  // namespace

void add_structured_fields(json& body, ApiKind api, const StructuredSpec& spec) {
  if (spec.has_tools()) {
    if (api == ApiKind::kCompletions || api == ApiKind::kSglang) {
      throw ConfigError("tool calls need a chat-style API: use --backend openai-chat, openai-responses or anthropic "
                        "(completions and /generate have no tools)");
    }
    add_tools(body, api, spec);
  }
  if (spec.has_format()) add_format(body, api, spec);
}

}  // namespace llmload
