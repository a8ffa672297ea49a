// LoRA adapters in llmload-server's front end: the --lora-modules syntax and the other flags,
// /v1/models, serving an adapter on every API, and the LoRA metrics' exposition.
#include <gtest/gtest.h>

#include <string>
#include <variant>

#include "llmload/server/cli.hpp"
#include "llmload/server/json.hpp"
#include "llmload/server/lora_modules.hpp"
#include "llmload/server/metrics.hpp"
#include "llmload/server/router.hpp"

namespace llmload::server::lora_server_test {

using nlohmann::json;

ServerConfig lora_server_config() {
  ServerConfig c;
  c.models = {"base", "other"};
  c.max_model_len = 256;
  c.lora.enabled = true;
  c.lora.modules = {{"lora-a", "/adapters/a", "base"}, {"lora-b", "/adapters/b", "other"}};
  return c;
}

RouteResult post(const Router& router, std::string_view path, const std::string& body) {
  return router.route("POST", path, body, RequestContext{1, 1700000000});
}

TEST(LoraModules, NameEqualsPathAndTheJsonFormParse) {
  const std::vector<std::string> models = {"base", "big"};
  LoraModule m = parse_lora_module("sql=/adapters/sql", models);
  EXPECT_EQ(m.name, "sql");
  EXPECT_EQ(m.path, "/adapters/sql");
  EXPECT_EQ(m.base_model, "base") << "the first --model by default";
  m = parse_lora_module(R"({"name":"chat","path":"/a/chat","base_model_name":"big"})", models);
  EXPECT_EQ(m.name, "chat");
  EXPECT_EQ(m.path, "/a/chat");
  EXPECT_EQ(m.base_model, "big");
  m = parse_lora_module(R"({"name":"x","path":"/x"})", models);
  EXPECT_EQ(m.base_model, "base");
}

TEST(LoraModules, BadItemsSayWhatIsWrong) {
  const std::vector<std::string> models = {"base"};
  EXPECT_THROW(parse_lora_module("=/x", models), LoraModuleError);
  EXPECT_THROW(parse_lora_module("a=", models), LoraModuleError);
  EXPECT_THROW(parse_lora_module("just-a-name", models), LoraModuleError);
  EXPECT_THROW(parse_lora_module(R"({"name":"a"})", models), LoraModuleError);
  EXPECT_THROW(parse_lora_module(R"({"name":"a","path":"/x","rank":8})", models), LoraModuleError);
  try {
    parse_lora_module(R"({"name":"a","path":"/x","base_model_name":"nope"})", models);
    FAIL() << "an unknown base model must be refused";
  } catch (const LoraModuleError& e) {
    EXPECT_NE(std::string(e.what()).find("--model nope"), std::string::npos) << e.what();
  }
}

TEST(LoraCli, FlagsParseAndMaxCpuLorasDefaultsToMaxLoras) {
  const CliOutcome o = parse_command_line({"--profile", "tiny", "--model", "base", "--lora-modules", "a=/x", "b=/y",
                                           "--lora-modules", R"({"name":"c","path":"/z"})", "--max-loras", "2",
                                           "--lora-load-time", "7ms"});
  ASSERT_TRUE(o.config) << o.err;
  const LoraConfig& l = o.config->lora;
  EXPECT_TRUE(l.enabled);
  ASSERT_EQ(l.modules.size(), 3u);
  EXPECT_EQ(l.modules[1].name, "b");
  EXPECT_EQ(l.modules[2].path, "/z");
  EXPECT_EQ(l.max_loras, 2);
  EXPECT_EQ(l.max_cpu_loras, 2);
  EXPECT_EQ(l.max_lora_rank, 16);
  ASSERT_TRUE(l.load_time);
  EXPECT_EQ(*l.load_time, std::chrono::milliseconds(7));
  EXPECT_FALSE(l.disk_load_time);
  EXPECT_EQ(lora_adapter_id(l, "b"), 2);
  EXPECT_EQ(lora_adapter_id(l, "base"), 0);
}

TEST(LoraCli, WithoutLoraFlagsLoraIsOff) {
  const CliOutcome o = parse_command_line({});
  ASSERT_TRUE(o.config) << o.err;
  EXPECT_FALSE(o.config->lora.enabled);
  EXPECT_TRUE(o.config->lora.modules.empty());
}

TEST(LoraCli, BadSettingsExit2NamingTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--lora-modules", "a=/x", "--max-loras", "2", "--max-cpu-loras", "1"}, "--max-cpu-loras"},
      {{"--max-loras", "2"}, "--lora-modules"},
      {{"--lora-modules", "a=/x", "a=/y"}, "twice"},
      {{"--model", "m", "--lora-modules", "m=/x"}, "--model"},
      {{"--lora-modules", "a=/x", "--max-lora-rank", "12"}, "--max-lora-rank"},
      {{"--lora-modules", "a=/x", "--latency-model", "fixed", "--lora-load-time", "5ms"}, "--latency-model engine"},
      {{"--lora-modules", "a=/x", "--lora-load-time", "5"}, "--lora-load-time"},
  };
  for (const auto& [args, needle] : cases) {
    const CliOutcome o = parse_command_line(args);
    EXPECT_FALSE(o.config) << needle;
    EXPECT_EQ(o.exit_code, 2) << needle;
    EXPECT_NE(o.err.find(needle), std::string::npos) << o.err;
  }
}

TEST(LoraCli, TheFixedModelServesAdapters) {
  const CliOutcome o = parse_command_line({"--latency-model", "fixed", "--lora-modules", "a=/x"});
  ASSERT_TRUE(o.config) << o.err;
  EXPECT_EQ(o.config->lora.modules.size(), 1u);
}

TEST(LoraRouter, ModelsListsTheAdaptersAfterTheBaseModels) {
  const Router router(lora_server_config(), 1600000000);
  const RouteResult routed = router.route("GET", "/v1/models", "", RequestContext{1, 1});
  const auto* reply = std::get_if<HttpReply>(&routed);
  ASSERT_NE(reply, nullptr);
  const json data = json::parse(reply->body).at("data");
  ASSERT_EQ(data.size(), 4u);
  EXPECT_EQ(data[0]["id"], "base");
  EXPECT_TRUE(data[0]["parent"].is_null());
  EXPECT_EQ(data[1]["id"], "other");
  EXPECT_EQ(data[2]["id"], "lora-a");
  EXPECT_EQ(data[2]["root"], "/adapters/a");
  EXPECT_EQ(data[2]["parent"], "base");
  EXPECT_EQ(data[3]["parent"], "other");
  EXPECT_TRUE(data[3]["max_model_len"].is_null());
  EXPECT_NE(data[2]["permission"][0]["id"], data[0]["permission"][0]["id"]);
}

TEST(LoraRouter, EveryApiServesAnAdapterByName) {
  const Router router(lora_server_config(), 1600000000);
  const std::vector<std::pair<std::string, std::string>> requests = {
      {"/v1/completions", R"({"model":"lora-a","prompt":"hello there","max_tokens":4})"},
      {"/v1/chat/completions", R"({"model":"lora-a","messages":[{"role":"user","content":"hi"}],"max_tokens":4})"},
      {"/v1/responses", R"({"model":"lora-b","input":"hi","max_output_tokens":4})"},
      {"/v1/messages", R"({"model":"lora-b","max_tokens":4,"messages":[{"role":"user","content":"hi"}]})"},
  };
  for (const auto& [path, body] : requests) {
    const RouteResult r = post(router, path, body);
    const auto* job = std::get_if<GenerationJob>(&r);
    ASSERT_NE(job, nullptr) << path << ": " << std::get<HttpReply>(r).body;
    EXPECT_EQ(job->request.model, json::parse(body)["model"]) << path << ": answers name the adapter";
    EXPECT_EQ(job->request.max_tokens, 4);
  }
}

TEST(LoraRouter, AnUnknownModelIsStill404) {
  const Router router(lora_server_config(), 1600000000);
  const RouteResult r = post(router, "/v1/completions", R"({"model":"lora-z","prompt":"hi","max_tokens":4})");
  const auto* reply = std::get_if<HttpReply>(&r);
  ASSERT_NE(reply, nullptr);
  EXPECT_EQ(reply->status, 404);
  EXPECT_EQ(json::parse(reply->body)["error"]["message"], "The model `lora-z` does not exist.");
}

TEST(LoraMetrics, TheInfoGaugeHasVllmsLabelsAndEveryLabelSetKeepsItsLastTime) {
  ServerMetrics m(MetricsLabels{"base"}, 256, 16, 100);
  EXPECT_EQ(m.render().find("lora"), std::string::npos) << "off until enabled";
  m.enable_lora(2);
  m.set_lora_requests("a", "b", 1700000000.5);
  m.set_lora_requests("a,b", "", 1700000001.0);
  m.set_lora_requests("a", "b", 1700000002.0);
  m.add_lora_loads(3, 1);
  const std::string text = m.render();
  EXPECT_NE(text.find("# TYPE vllm:lora_requests_info gauge\n"), std::string::npos) << text;
  EXPECT_NE(text.find("vllm:lora_requests_info{max_lora=\"2\",running_lora_adapters=\"a,b\",waiting_lora_adapters=\"\"} "
                      "1.700000001e+09\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("vllm:lora_requests_info{max_lora=\"2\",running_lora_adapters=\"a\",waiting_lora_adapters=\"b\"} "
                      "1.700000002e+09\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("running_lora_adapters=\"a\",waiting_lora_adapters=\"b\"} 1.700000002e+09"), std::string::npos)
      << "one sample per label set, at its last time";
  m.set_lora_requests("", "", 1700000003.25);
  EXPECT_NE(m.render().find("waiting_lora_adapters=\"\"} 1.70000000325e+09\n"), std::string::npos)
      << "the fraction of a second is kept, as prometheus_client writes it";
  EXPECT_NE(text.find("llmload:lora_loads_total{engine=\"0\",model_name=\"base\"} 3.0\n"), std::string::npos);
  EXPECT_NE(text.find("llmload:lora_disk_loads_total{engine=\"0\",model_name=\"base\"} 1.0\n"), std::string::npos);
}

}  // namespace llmload::server::lora_server_test
