// The schema-driven JSON generator (schema_json_generator.hpp) and the invalid-output fault's
// breaking of it (invalid_output.hpp), checked with a validator written apart (schema_validator.hpp).
#include "llmload/server/schema_json_generator.hpp"

#include <set>

#include <gtest/gtest.h>

#include "llmload/server/fault.hpp"
#include "llmload/server/invalid_output.hpp"
#include "schema_validator.hpp"

// A named namespace: these helpers cannot clash with other tests' in a unity build.
namespace llmload::server::schema_generator_test {

using nlohmann::json;
using schema_test::validate;

/// Schemas of the kinds tools and structured outputs use.
std::vector<json> schemas() {
  return {
      json::parse(R"({"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city"]})"),
      json::parse(R"({"type":"object","properties":{"n":{"type":"integer","minimum":3,"maximum":5}},"required":["n"],"additionalProperties":false})"),
      json::parse(R"({"type":"object","properties":{"x":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1}},"required":["x"]})"),
      json::parse(R"({"type":"object","properties":{"x":{"type":"number","minimum":0,"maximum":1,"exclusiveMinimum":true}},"required":["x"]})"),
      json::parse(R"({"type":"object","properties":{"k":{"type":"integer","multipleOf":7,"minimum":10,"maximum":60}},"required":["k"]})"),
      json::parse(R"({"type":"object","properties":{"s":{"type":"string","minLength":12,"maxLength":14}},"required":["s"]})"),
      json::parse(R"({"type":"object","properties":{"s":{"type":"string","maxLength":2}},"required":["s"]})"),
      json::parse(R"({"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"},"minItems":2,"maxItems":4,"uniqueItems":true}},"required":["tags"]})"),
      json::parse(R"({"type":"object","properties":{"flags":{"type":"array","items":{"type":"boolean"},"maxItems":2,"uniqueItems":true}},"required":["flags"]})"),
      json::parse(R"({"type":"object","properties":{"p":{"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}],"items":false,"minItems":2}},"required":["p"]})"),
      json::parse(R"({"type":"object","properties":{"v":{"type":["string","null"]},"w":{"type":["integer","boolean"]}},"required":["v","w"]})"),
      json::parse(R"({"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"object","properties":{"c":{"type":"null"}},"required":["c"]}},"required":["b"]}},"required":["a"]})"),
      json::parse(R"({"type":"object","properties":{"c":{"const":"fixed"},"e":{"enum":[1,"two",null,{"x":3}]}},"required":["c","e"]})"),
      json::parse(R"({"type":"object","properties":{"o":{"anyOf":[{"type":"string"},{"type":"integer","minimum":100}]}},"required":["o"]})"),
      json::parse(R"({"type":"object","properties":{"o":{"oneOf":[{"type":"string"},{"type":"boolean"}]}},"required":["o"]})"),
      json::parse(R"({"allOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"properties":{"b":{"type":"integer"}},"required":["b"]}]})"),
      json::parse(R"({"$defs":{"Item":{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"}},"required":["id","name"]}},"type":"object","properties":{"items":{"type":"array","items":{"$ref":"#/$defs/Item"},"minItems":1}},"required":["items"]})"),
      json::parse(R"({"definitions":{"Node":{"type":"object","properties":{"value":{"type":"integer"},"next":{"$ref":"#/definitions/Node"}},"required":["value"]}},"$ref":"#/definitions/Node"})"),
      json::parse(R"({"type":"object","properties":{"when":{"type":"string","format":"date-time"},"day":{"type":"string","format":"date"},"id":{"type":"string","format":"uuid"},"mail":{"type":"string","format":"email"}},"required":["when","day","id","mail"]})"),
      json::parse(R"({"type":"object","minProperties":3,"properties":{"a":{"type":"string"},"b":{"type":"string"},"c":{"type":"string"},"d":{"type":"string"}}})"),
      json::parse(R"({"type":"object","maxProperties":1,"properties":{"a":{"type":"string"},"b":{"type":"string"},"c":{"type":"string"}}})"),
      json::parse(R"({"type":"object","properties":{},"x-unknown-keyword":{"ignored":true}})"),
      json::parse(R"({"type":"array","items":{"type":"number","minimum":-5,"maximum":-4}})"),
      json::parse(R"({"type":"integer","minimum":-3,"maximum":-3})"),
      json::parse(R"({"type":"string","enum":["only"]})"),
      json::parse(R"({"properties":{"implied":{"type":"boolean"}},"required":["implied"]})"),
      json::parse(R"({})"),
  };
}

TEST(SchemaJsonGenerator, ValuesValidateAgainstTheirSchemas) {
  for (const json& schema : schemas()) {
    for (std::uint64_t seed = 0; seed < 64; ++seed) {
      const std::string text = generate_schema_json(schema, seed);
      const json value = json::parse(text);  // the text is JSON
      EXPECT_EQ(validate(schema, value), "") << schema.dump() << "\n  seed " << seed << ": " << text;
    }
  }
}

TEST(SchemaJsonGenerator, DeterministicAndVaried) {
  const json schema = schemas().front();
  std::set<std::string> seen;
  for (std::uint64_t seed = 0; seed < 32; ++seed) {
    const std::string text = generate_schema_json(schema, seed);
    EXPECT_EQ(text, generate_schema_json(schema, seed));
    EXPECT_EQ(text, write_spaced_json(generate_schema_value(schema, seed)));
    seen.insert(text);
  }
  EXPECT_GT(seen.size(), 8u);  // the seed (the prompt) changes the value
}

TEST(SchemaJsonGenerator, SpacedTextSplitsIntoWords) {
  ojson v = ojson::object();
  v["a"] = "x \"y\"";
  v["b"] = ojson::array({1, 2.5, true, nullptr});
  v["c"] = ojson::object();
  EXPECT_EQ(write_spaced_json(v), R"({"a": "x \"y\"", "b": [1, 2.5, true, null], "c": {}})");
}

TEST(SchemaJsonGenerator, RecursiveSchemasEnd) {
  const json schema = json::parse(R"({"$defs":{"T":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/T"},"minItems":1}},"required":["kids"]}},"$ref":"#/$defs/T"})");
  const std::string text = generate_schema_json(schema, 1);  // bounded by the depth cut
  EXPECT_FALSE(text.empty());
  EXPECT_FALSE(json::parse(text, nullptr, false).is_discarded());
}

TEST(InvalidOutputFault, SpecGrammar) {
  EXPECT_EQ(parse_fault_spec("invalid-output").kind, FaultKind::kInvalidOutput);
  EXPECT_EQ(parse_fault_spec("invalid-output").invalid_output, InvalidOutputMode::kJson);
  EXPECT_EQ(parse_fault_spec("Invalid-Output=schema").invalid_output, InvalidOutputMode::kSchema);
  EXPECT_EQ(format_fault_spec(parse_fault_spec("invalid-output=schema")), "invalid-output=schema");
  EXPECT_EQ(parse_fault_rule("0.5:invalid-output=json").fault.invalid_output, InvalidOutputMode::kJson);
  EXPECT_THROW((void)parse_fault_spec("invalid-output=xml"), FaultSpecError);
  EXPECT_THROW((void)parse_fault_spec("invalid-output@3"), FaultSpecError);
}

TEST(InvalidOutputFault, JsonVariantDoesNotParse) {
  for (const json& schema : schemas()) {
    StructuredOutput out;
    out.schema = schema;
    out.text = generate_schema_json(schema, 7);
    const auto broken = make_invalid_output(out, InvalidOutputMode::kJson);
    EXPECT_EQ(broken->invalid, "json");
    EXPECT_TRUE(json::parse(broken->text, nullptr, false).is_discarded()) << broken->text;
  }
}

TEST(InvalidOutputFault, SchemaVariantParsesButFailsTheSchema) {
  int schema_variants = 0;
  for (const json& schema : schemas()) {
    StructuredOutput out;
    out.schema = schema;
    out.text = generate_schema_json(schema, 7);
    const auto broken = make_invalid_output(out, InvalidOutputMode::kSchema);
    ASSERT_TRUE(broken->invalid.has_value());
    if (*broken->invalid == "json") {  // only for schemas that accept anything it can break
      EXPECT_TRUE(json::parse(broken->text, nullptr, false).is_discarded()) << broken->text;
      continue;
    }
    ++schema_variants;
    const json value = json::parse(broken->text);
    EXPECT_NE(validate(schema, value), "") << schema.dump() << " still accepts " << broken->text;
  }
  EXPECT_GE(schema_variants, 20);
  // A required property is what goes first.
  StructuredOutput out;
  out.schema = schemas().front();
  out.text = R"({"city": "the", "unit": "celsius"})";
  EXPECT_EQ(make_invalid_output(out, InvalidOutputMode::kSchema)->text, R"({"unit": "celsius"})");
}

}  // namespace llmload::server::schema_generator_test
