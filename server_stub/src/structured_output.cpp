#include "llmload/server/structured_output.hpp"

#include <fmt/format.h>

#include "llmload/server/rng.hpp"
#include "llmload/server/schema_json_generator.hpp"

namespace llmload::server {
namespace {

using nlohmann::json;

// Salts that keep the draws of one output seed apart (the filler and reasoning use it too).
constexpr std::uint64_t kToolPickSalt = 0x746f6f6c7069636bULL;  // "toolpick"
constexpr std::uint64_t kArgumentsSalt = 0x6172677330303031ULL;  // "args0001"

}  // namespace

const json& json_object_schema() {
  static const json schema = json::parse(R"({"type":"object","properties":{
      "answer":{"type":"string"},"confidence":{"type":"number","minimum":0,"maximum":1}},
      "required":["answer","confidence"]})");
  return schema;
}

std::shared_ptr<const StructuredOutput> make_structured_output(const std::vector<ToolSpec>& tools,
                                                               const ToolChoice& choice, const OutputFormat& format,
                                                               std::uint64_t output_seed) {
  const std::uint64_t arguments_seed = Rng::for_stream(output_seed ^ kArgumentsSalt, 0).next_u64();
  if (!tools.empty() && choice.mode != ToolChoiceMode::kNone) {
    const ToolSpec* tool = nullptr;
    if (choice.mode == ToolChoiceMode::kNamed) {
      for (const auto& t : tools) {
        if (t.name == choice.name) tool = &t;
      }
    }
    if (tool == nullptr) {
      tool = &tools[Rng::for_stream(output_seed ^ kToolPickSalt, 0).next_u64() % tools.size()];
    }
    auto out = std::make_shared<StructuredOutput>();
    out->kind = StructuredKind::kToolCall;
    out->tool_name = tool->name;
    out->schema = tool->parameters.is_null() ? json{{"type", "object"}, {"properties", json::object()}} : tool->parameters;
    // Arguments are always an object, whatever the schema says at the top.
    ojson value = generate_schema_value(out->schema, arguments_seed);
    out->text = value.is_object() ? write_spaced_json(value) : "{}";
    return out;
  }
  if (format.kind == OutputFormatKind::kText) return nullptr;
  auto out = std::make_shared<StructuredOutput>();
  out->kind = StructuredKind::kJson;
  out->schema = format.kind == OutputFormatKind::kJsonObject ? json_object_schema() : format.schema;
  out->text = generate_schema_json(out->schema, arguments_seed);
  return out;
}

std::string tool_call_id_suffix(std::uint64_t seed, std::string_view response_id, std::uint64_t salt) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : response_id) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  Rng rng = Rng::for_stream(seed ^ salt, h);
  const std::uint64_t hi = rng.next_u64();
  const std::uint64_t lo = rng.next_u64();
  return fmt::format("{:016x}{:08x}", hi, lo & 0xffffffffULL);
}

}  // namespace llmload::server
