// The shard settings (--shard-index, --shard-count, --start-at, JOB_COMPLETION_INDEX) and the
// LLMLOAD_* environment names of every `llmload run` option.
#include <gtest/gtest.h>

#include <set>

#include "llmload/loadgen/config_error.hpp"
#include "settings.hpp"

namespace llmload {
namespace {

std::string error_of(ScenarioConfig& cfg, const char* job_index) {
  try {
    app::resolve_shard(cfg, job_index);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(EnvName, IsLlmloadPlusTheFlagInUpperSnakeCase) {
  EXPECT_EQ(app::env_name("request-rate"), "LLMLOAD_REQUEST_RATE");
  EXPECT_EQ(app::env_name("shard-count"), "LLMLOAD_SHARD_COUNT");
  EXPECT_EQ(app::env_name("base-url"), "LLMLOAD_BASE_URL");
  EXPECT_EQ(app::env_name("seed"), "LLMLOAD_SEED");
  // Every setting has a distinct variable.
  std::set<std::string> names;
  for (const auto& s : app::settings()) EXPECT_TRUE(names.insert(app::env_name(s.name)).second) << s.name;
  for (const char* flag : {"shard-count", "shard-index", "start-at"}) EXPECT_TRUE(names.count(app::env_name(flag))) << flag;
}

TEST(ShardSettings, FlagsSetTheShard) {
  ScenarioConfig cfg;
  app::apply_setting("shard-count", "4", "--shard-count", cfg);
  app::apply_setting("shard-index", "3", "--shard-index", cfg);
  app::apply_setting("start-at", "2025-06-01T12:00:00Z", "--start-at", cfg);
  app::resolve_shard(cfg, "1");  // the flag wins over JOB_COMPLETION_INDEX
  EXPECT_EQ(cfg.shard.count, 4);
  EXPECT_EQ(cfg.shard.index, 3);
  ASSERT_TRUE(cfg.shard.start_at.has_value());
  EXPECT_EQ(format_rfc3339(*cfg.shard.start_at), "2025-06-01T12:00:00.000Z");
  // Scenario files can hold them too (one file for all shards: the count and the start).
  ScenarioConfig f;
  app::apply_scenario_text("shard_count: 3\nstart_at: 1748779200\n", "s.yaml", f);
  EXPECT_EQ(f.shard.count, 3);
  EXPECT_EQ(epoch_seconds(*f.shard.start_at), 1748779200.0);
}

TEST(ShardSettings, IndexDefaultsToJobCompletionIndex) {
  ScenarioConfig cfg;
  app::apply_setting("shard-count", "5", "--shard-count", cfg);
  app::resolve_shard(cfg, "2");
  EXPECT_EQ(cfg.shard.index, 2);
  EXPECT_TRUE(cfg.shard.index_given);

  ScenarioConfig unsharded;  // without --shard-count, JOB_COMPLETION_INDEX means nothing
  app::resolve_shard(unsharded, "2");
  EXPECT_EQ(unsharded.shard.index, 0);
  EXPECT_EQ(unsharded.shard.count, 1);

  ScenarioConfig one;
  app::apply_setting("shard-count", "1", "--shard-count", one);
  app::resolve_shard(one, nullptr);
  EXPECT_EQ(one.shard.index, 0);
}

TEST(ShardSettings, InconsistentShardsAreErrors) {
  ScenarioConfig no_count;
  app::apply_setting("shard-index", "1", "--shard-index", no_count);
  EXPECT_NE(error_of(no_count, nullptr).find("--shard-index 1 needs --shard-count"), std::string::npos);

  ScenarioConfig no_index;
  app::apply_setting("shard-count", "3", "--shard-count", no_index);
  std::string e = error_of(no_index, nullptr);
  EXPECT_NE(e.find("--shard-index I"), std::string::npos) << e;
  EXPECT_NE(e.find("JOB_COMPLETION_INDEX"), std::string::npos) << e;
  ScenarioConfig empty_env;
  app::apply_setting("shard-count", "3", "--shard-count", empty_env);
  EXPECT_NE(error_of(empty_env, "").find("--shard-index I"), std::string::npos);

  ScenarioConfig too_big;
  app::apply_setting("shard-count", "3", "--shard-count", too_big);
  e = error_of(too_big, "3");
  EXPECT_NE(e.find("shard index 3 is not below --shard-count 3"), std::string::npos) << e;

  ScenarioConfig bad_env;
  app::apply_setting("shard-count", "3", "--shard-count", bad_env);
  e = error_of(bad_env, "two");
  EXPECT_NE(e.find("JOB_COMPLETION_INDEX"), std::string::npos) << e;

  ScenarioConfig cfg;
  try {
    app::apply_setting("shard-count", "0", "--shard-count (from $LLMLOAD_SHARD_COUNT)", cfg);
    ADD_FAILURE();
  } catch (const ConfigError& err) {
    EXPECT_NE(std::string(err.what()).find("$LLMLOAD_SHARD_COUNT"), std::string::npos) << err.what();
  }
  EXPECT_THROW(app::apply_setting("start-at", "noon", "--start-at", cfg), ConfigError);
}

}  // namespace
}  // namespace llmload
