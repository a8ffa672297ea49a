#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "llmload/server/engine/profile.hpp"

namespace llmload::server {
namespace {

TEST(Profile, BuiltinsAreListedWithTheDefaultFirst) {
  const auto& names = builtin_profile_names();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front(), "llama-3-8b-h100");
  for (const char* n : {"llama-3-70b-4xh100", "tiny", "llama-2-7b-h100"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  }
}

TEST(Profile, Llama3_8bOnH100HasTheKvCacheVllmWouldReport) {
  const Profile p = load_profile("llama-3-8b-h100");
  EXPECT_EQ(p.name, "llama-3-8b-h100");
  EXPECT_DOUBLE_EQ(p.model.kv_bytes_per_token(), 131072.0);  // 128 KiB
  EXPECT_NEAR(p.model.weight_bytes, 16.06e9, 1e6);
  // (80 GiB x 0.9 - 16.06 GB - 3 GB) / 128 KiB: about 444k tokens (vLLM logs ~400k+ for this setup).
  const double expected = (80.0 * 1073741824.0 * 0.9 - 16.06e9 - 3e9) / 131072.0;
  EXPECT_NEAR(static_cast<double>(p.kv_cache_tokens()), expected, 16.0);
  EXPECT_EQ(p.kv_cache_tokens() % p.engine.block_size, 0);
  EXPECT_EQ(p.num_blocks(), p.kv_cache_tokens() / 16);
}

TEST(Profile, SeventyBillionOnFourGpusSplitsWeightsAndAddsBandwidth) {
  const Profile p = load_profile("llama-3-70b-4xh100");
  EXPECT_EQ(p.device.count, 4);
  EXPECT_DOUBLE_EQ(p.model.kv_bytes_per_token(), 327680.0);  // 320 KiB
  EXPECT_DOUBLE_EQ(p.total_bandwidth(), 4 * 3.35e12);
  EXPECT_GT(p.kv_cache_tokens(), 300000);
}

TEST(Profile, TinyHasASmallCacheForFastTests) {
  const Profile p = load_profile("tiny");
  EXPECT_EQ(p.kv_cache_tokens(), 4096);
  EXPECT_EQ(p.num_blocks(), 256);
  EXPECT_LE(p.engine.max_model_len, p.kv_cache_tokens());
}

TEST(Profile, OverridesReplaceEngineKnobsAndAreValidated) {
  Profile p = load_profile("tiny");
  EngineOverrides o;
  o.max_num_seqs = 3;
  o.kv_cache_tokens = 8192;
  o.block_size = 32;
  apply_overrides(p, o);
  EXPECT_EQ(p.engine.max_num_seqs, 3);
  EXPECT_EQ(p.kv_cache_tokens(), 8192);
  EXPECT_EQ(p.num_blocks(), 256);

  Profile q = load_profile("tiny");
  EngineOverrides too_small;
  too_small.kv_cache_tokens = 1024;  // below max_model_len 2048
  try {
    apply_overrides(q, too_small);
    FAIL() << "expected ProfileError";
  } catch (const ProfileError& e) {
    EXPECT_NE(std::string(e.what()).find("max_model_len"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--kv-cache-tokens"), std::string::npos) << e.what();
  }
}

TEST(Profile, UnknownProfileNamesTheBuiltins) {
  try {
    load_profile("llama-9");
    FAIL();
  } catch (const ProfileError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("llama-9"), std::string::npos);
    EXPECT_NE(m.find("tiny"), std::string::npos);
  }
}

TEST(Profile, MissingFileIsAClearError) {
  try {
    load_profile("/nonexistent/profile.yaml");
    FAIL();
  } catch (const ProfileError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/profile.yaml"), std::string::npos);
  }
}

TEST(Profile, UserFileIsReadAndTyposAreNamed) {
  const std::string path = ::testing::TempDir() + "/llmload_profile_test.yaml";
  {
    std::ofstream out(path);
    out << "name: mine\nmodel: {parameters: 1e9, layers: 8, hidden_size: 1024, kv_heads: 4, head_dim: 64}\n"
           "device: {memory_bytes: 24GB, memory_bandwidth: 1e12, peak_flops: 1e14}\n"
           "engine: {max_num_seqs: 8}\n";
  }
  const Profile p = load_profile(path);
  EXPECT_EQ(p.name, "mine");
  EXPECT_DOUBLE_EQ(p.model.weight_bytes, 2e9);  // defaults to 2 bytes per parameter
  EXPECT_EQ(p.engine.max_num_seqs, 8);
  EXPECT_EQ(p.source, path);

  try {
    parse_profile("model: {parameters: 1e9, layers: 8, hidden_size: 1, kv_heads: 1, head_dim: 1, kv_heads_typo: 3}\n"
                  "device: {memory_bytes: 24GB, memory_bandwidth: 1e12, peak_flops: 1e14}\n",
                  "x.yaml");
    FAIL();
  } catch (const ProfileError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("x.yaml"), std::string::npos) << m;
    EXPECT_NE(m.find("model.kv_heads_typo"), std::string::npos) << m;
  }
  try {
    parse_profile("model: {parameters: 70e9, layers: 8, hidden_size: 1, kv_heads: 1, head_dim: 1}\n"
                  "device: {memory_bytes: 24GB, memory_bandwidth: 1e12, peak_flops: 1e14}\n",
                  "big.yaml");
    FAIL();
  } catch (const ProfileError& e) {
    EXPECT_NE(std::string(e.what()).find("do not fit"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_profile("model: [1, 2]\n", "y.yaml"), ProfileError);
  EXPECT_THROW(parse_profile("{{{", "z.yaml"), ProfileError);
  std::remove(path.c_str());
}

TEST(Profile, ImplausibleValuesAreRejectedNotComputedWith) {
  const std::string model = "model: {parameters: 1e9, layers: 8, hidden_size: 1024, kv_heads: 4, head_dim: 64}\n";
  const std::string device = "device: {memory_bytes: 24GB, memory_bandwidth: 1e12, peak_flops: 1e14}\n";
  auto rejected = [&](const std::string& yaml, const std::string& must_mention) {
    try {
      parse_profile(yaml, "p.yaml");
      ADD_FAILURE() << "accepted: " << yaml;
    } catch (const ProfileError& e) {
      EXPECT_NE(std::string(e.what()).find(must_mention), std::string::npos) << e.what();
    }
  };
  rejected(model + "device: {memory_bytes: 1e30, memory_bandwidth: 1e12, peak_flops: 1e14}\n", "device.memory_bytes");
  rejected("model: {parameters: 1e9, weight_bytes: 1e30, layers: 8, hidden_size: 1, kv_heads: 1, head_dim: 1}\n" +
               device + "engine: {kv_cache_tokens: 4096}\n",
           "model.weight_bytes");
  rejected("model: {parameters: 1e9, weight_bytes: 20GB, layers: 8, hidden_size: 1, kv_heads: 1, head_dim: 1}\n" +
               device + "engine: {kv_cache_tokens: 4096, gpu_memory_utilization: 0.5}\n",
           "do not fit");
  rejected(model + "device: {memory_bytes: 24GB, memory_bandwidth: 1, peak_flops: 1e14}\n", "device.memory_bandwidth");
  rejected(model + device + "engine: {max_num_seqs: 512, max_num_batched_tokens: 256}\n", "max_num_batched_tokens");
  rejected("model: {parameters: 1e9, layers: 99999, hidden_size: 1, kv_heads: 1, head_dim: 1}\n" + device, "model.layers");
}

TEST(Profile, ByteSizes) {
  EXPECT_DOUBLE_EQ(parse_bytes("16GB"), 16e9);
  EXPECT_DOUBLE_EQ(parse_bytes("80GiB"), 80.0 * 1073741824.0);
  EXPECT_DOUBLE_EQ(parse_bytes("3e9"), 3e9);
  EXPECT_DOUBLE_EQ(parse_bytes("512 KiB"), 524288.0);
  EXPECT_THROW(parse_bytes("12 parsecs"), std::invalid_argument);
  EXPECT_THROW(parse_bytes("GB"), std::invalid_argument);
}

}  // namespace
}  // namespace llmload::server
