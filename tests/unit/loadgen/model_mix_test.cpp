// Many models in one run (issue 19): --model a,b,c with --model-weights deals requests by the
// weights (or a Zipf skew), the same key always to the same model, and bad values are errors
// naming the fix; the request body names the request's model on the template path too.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/model_mix.hpp"
#include "llmload/loadgen/request_builder.hpp"

namespace llmload {
namespace {

std::map<std::string, int> deal(const ModelMix& mix, int n) {
  std::map<std::string, int> count;
  for (int i = 0; i < n; ++i) ++count[mix.pick(static_cast<std::uint64_t>(i))];
  return count;
}

// |observed share - p| within 4 binomial standard errors.
void expect_share(int k, int n, double p, const std::string& what) {
  const double se = std::sqrt(p * (1 - p) / n);
  EXPECT_NEAR(static_cast<double>(k) / n, p, 4 * se) << what;
}

TEST(ModelMix, WeightsZipfAndUniform) {
  const std::vector<std::string> m = {"base", "lora-a", "lora-b"};
  const int n = 30000;
  ModelMix w(m, "5,3,2", 7);
  EXPECT_EQ(w.rule(), "weights");
  auto c = deal(w, n);
  expect_share(c["base"], n, 0.5, "base");
  expect_share(c["lora-a"], n, 0.3, "lora-a");
  expect_share(c["lora-b"], n, 0.2, "lora-b");
  ModelMix z(m, "zipf", 7);
  const double h = 1 + 0.5 + 1.0 / 3;  // harmonic number H_3
  EXPECT_NEAR(z.shares()[0], 1 / h, 1e-12);
  EXPECT_NEAR(z.shares()[2], (1.0 / 3) / h, 1e-12);
  c = deal(z, n);
  expect_share(c["base"], n, 1 / h, "zipf base");
  expect_share(c["lora-b"], n, (1.0 / 3) / h, "zipf lora-b");
  ModelMix z2(m, "zipf:2", 7);
  EXPECT_EQ(z2.rule(), "zipf:2");
  EXPECT_NEAR(z2.shares()[1] / z2.shares()[0], 0.25, 1e-12);
  ModelMix u(m, "", 7);
  c = deal(u, n);
  for (const auto& name : m) expect_share(c[name], n, 1.0 / 3, "uniform " + name);
}

TEST(ModelMix, SameKeySameModelAndSeeded) {
  const std::vector<std::string> m = {"a", "b", "c", "d"};
  ModelMix x(m, "", 1), y(m, "", 1), other(m, "", 2);
  int differ = 0;
  for (std::uint64_t k = 0; k < 200; ++k) {
    EXPECT_EQ(x.pick(k), y.pick(k));
    differ += x.pick(k) != other.pick(k) ? 1 : 0;
  }
  EXPECT_GT(differ, 50) << "another seed deals otherwise";
}

TEST(ModelMix, BadValuesAreClearErrors) {
  const std::vector<std::string> m = {"a", "b"};
  auto message = [&](const std::string& w) {
    try {
      ModelMix(m, w, 1);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("1,2,3").find("3 weights for 2 models"), std::string::npos);
  EXPECT_NE(message("1,-2").find("not a positive number"), std::string::npos);
  EXPECT_NE(message("zipf:x").find("not a positive number"), std::string::npos);
  EXPECT_NE(message("zipfy").find("zipf:S"), std::string::npos);
  EXPECT_EQ(split_model_list(" a , b,c"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_THROW(split_model_list("a,,b"), ConfigError);
}

TEST(ModelMix, TheBodyNamesTheRequestsModel) {
  ScenarioConfig cfg;
  cfg.model = "a";
  cfg.models = {"a", "b\"quoted"};
  for (const char* backend : {"openai-completions", "openai-chat", "openai-responses", "anthropic"}) {
    cfg.backend = backend;
    RequestBuilder b(cfg, "", "h:1");
    EXPECT_TRUE(b.templated()) << backend;
    const WorkItem item = b.item(0);
    EXPECT_EQ(nlohmann::json::parse(b.build(item, {}, "b\"quoted").body)["model"], "b\"quoted") << backend;
    EXPECT_EQ(b.build(item, {}, "b\"quoted").body, b.dom_body(item, {}, "b\"quoted")) << backend;
    EXPECT_EQ(nlohmann::json::parse(b.build(item).body)["model"], "a") << backend;
  }
}

}  // namespace
}  // namespace llmload
