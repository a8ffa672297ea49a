// Length distributions: parsing, moments, bounds, determinism, genai-bench scenarios, errors.

#include <cmath>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "llmload/loadgen/workload/lengths.hpp"
#include "subprocess.hpp"
#include "workload_test_util.hpp"

namespace llmload {
namespace {

using wltest::config_error;

constexpr int kSamples = 20'000;

struct Stats {
  double mean = 0;
  double sd = 0;
  std::int64_t min = 0;
  std::int64_t max = 0;
  std::map<std::int64_t, int> counts;
};

Stats sample_stats(const LengthDistribution& d, std::uint64_t seed, int n = kSamples) {
  std::mt19937_64 rng(seed);
  Stats s;
  s.min = INT64_MAX;
  s.max = INT64_MIN;
  double sum = 0;
  double sum2 = 0;
  for (int i = 0; i < n; ++i) {
    const std::int64_t v = d.sample(rng);
    sum += static_cast<double>(v);
    sum2 += static_cast<double>(v) * static_cast<double>(v);
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
    ++s.counts[v];
  }
  s.mean = sum / n;
  s.sd = std::sqrt(sum2 / n - s.mean * s.mean);
  return s;
}

TEST(PortableRandom, UniformIntIsInRangeAndBalanced) {
  std::mt19937_64 rng(7);
  std::map<std::int64_t, int> counts;
  for (int i = 0; i < 30'000; ++i) ++counts[uniform_int(rng, -1, 1)];
  ASSERT_EQ(counts.size(), 3U);
  for (const auto& [v, c] : counts) {
    EXPECT_GE(v, -1);
    EXPECT_LE(v, 1);
    EXPECT_NEAR(c, 10'000, 400) << "value " << v;  // ~4.5 sd
  }
}

TEST(PortableRandom, StandardNormalHasUnitMoments) {
  std::mt19937_64 rng(11);
  double sum = 0, sum2 = 0;
  int within_one = 0;
  for (int i = 0; i < kSamples; ++i) {
    const double z = standard_normal(rng);
    sum += z;
    sum2 += z * z;
    within_one += std::abs(z) < 1.0 ? 1 : 0;
  }
  EXPECT_NEAR(sum / kSamples, 0.0, 0.03);
  EXPECT_NEAR(sum2 / kSamples, 1.0, 0.04);
  EXPECT_NEAR(static_cast<double>(within_one) / kSamples, 0.6827, 0.015);
}

TEST(PortableRandom, Uniform01IsInHalfOpenUnitInterval) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 10'000; ++i) {
    const double u = uniform01(rng);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
}

TEST(RoundLength, RoundsAndClamps) {
  EXPECT_EQ(round_length(0.4), 1);
  EXPECT_EQ(round_length(-5), 1);
  EXPECT_EQ(round_length(std::nan("")), 1);
  EXPECT_EQ(round_length(2.5), 3);
  EXPECT_EQ(round_length(2.49), 2);
  EXPECT_EQ(round_length(1e12), kMaxLength);
  EXPECT_EQ(round_length(HUGE_VAL), kMaxLength);
}

TEST(LengthDistribution, FixedAlwaysGivesN) {
  const auto d = LengthDistribution::parse("fixed:512");
  EXPECT_EQ(d.kind(), LengthDistribution::Kind::kFixed);
  const Stats s = sample_stats(d, 1, 1000);
  EXPECT_EQ(s.min, 512);
  EXPECT_EQ(s.max, 512);
  EXPECT_EQ(d.to_string(), "fixed:512");
}

TEST(LengthDistribution, UniformIsInclusiveAndFlat) {
  const auto d = LengthDistribution::parse("uniform:10,20");
  const Stats s = sample_stats(d, 2);
  EXPECT_EQ(s.min, 10);
  EXPECT_EQ(s.max, 20);
  EXPECT_EQ(s.counts.size(), 11U);
  for (const auto& [v, c] : s.counts) EXPECT_NEAR(c, kSamples / 11.0, 150) << v;
  EXPECT_NEAR(s.mean, 15.0, 0.1);
  EXPECT_DOUBLE_EQ(d.mean(), 15.0);
}

TEST(LengthDistribution, NormalMatchesMeanAndSd) {
  const auto d = LengthDistribution::parse("normal:500,100");
  const Stats s = sample_stats(d, 3);
  EXPECT_NEAR(s.mean, 500, 3.0);  // standard error 0.7
  EXPECT_NEAR(s.sd, 100, 3.0);
}

TEST(LengthDistribution, LognormalMatchesMeanAndSdOfTheLengths) {
  const auto d = LengthDistribution::parse("lognormal:1000,500");
  const Stats s = sample_stats(d, 4);
  EXPECT_NEAR(s.mean, 1000, 20.0);  // standard error 3.5
  EXPECT_NEAR(s.sd, 500, 30.0);
  // The underlying normal's parameters, as documented.
  const double sigma2 = std::log(1.0 + 0.25);
  const auto j = d.describe();
  EXPECT_NEAR(j["sigma"].get<double>(), std::sqrt(sigma2), 1e-12);
  EXPECT_NEAR(j["mu"].get<double>(), std::log(1000.0) - sigma2 / 2, 1e-12);
  // Skewed: the median is below the mean.
  int below = 0;
  for (const auto& [v, c] : s.counts) below += v < 1000 ? c : 0;
  EXPECT_GT(below, kSamples / 2);
}

TEST(LengthDistribution, SamplesAreClampedToOne) {
  const Stats s = sample_stats(LengthDistribution::parse("normal:5,100"), 5);
  EXPECT_EQ(s.min, 1);
  EXPECT_GT(s.counts.at(1), kSamples / 3);  // everything below 1 lands on 1
}

TEST(LengthDistribution, EmpiricalRespectsWeights) {
  const auto d = LengthDistribution::parse_empirical("# lengths\n100,1\n\n200,3  # heavy\n300,0\n", "mem");
  EXPECT_DOUBLE_EQ(d.mean(), 175.0);
  const Stats s = sample_stats(d, 6);
  EXPECT_EQ(s.counts.count(300), 0U);
  EXPECT_EQ(s.counts.size(), 2U);
  EXPECT_NEAR(static_cast<double>(s.counts.at(200)) / kSamples, 0.75, 0.015);
}

TEST(LengthDistribution, EmpiricalFileOfPlainLengths) {
  testing::TempDir dir;
  const std::string path = dir.file("lengths.txt");
  wltest::write_text(path, "10\n20\r\n30\n40");
  const auto d = LengthDistribution::parse("empirical:" + path);
  EXPECT_EQ(d.kind(), LengthDistribution::Kind::kEmpirical);
  EXPECT_EQ(d.to_string(), "empirical:" + path);
  const Stats s = sample_stats(d, 7);
  ASSERT_EQ(s.counts.size(), 4U);
  for (const auto& [v, c] : s.counts) {
    EXPECT_TRUE(v == 10 || v == 20 || v == 30 || v == 40);
    EXPECT_NEAR(c, kSamples / 4.0, 300);
  }
}

TEST(LengthDistribution, EmpiricalErrorsNameFileAndLine) {
  const std::string msg = config_error([] { LengthDistribution::parse_empirical("10\n20\nabc\n", "lens.txt"); });
  EXPECT_NE(msg.find("lens.txt:3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("length,weight"), std::string::npos) << msg;
  EXPECT_NE(config_error([] { LengthDistribution::parse_empirical("10,-1\n", "w.txt"); }).find("w.txt:1"),
            std::string::npos);
  EXPECT_NE(config_error([] { LengthDistribution::parse_empirical("# nothing\n\n", "e.txt"); }).find("e.txt"),
            std::string::npos);
  EXPECT_NE(config_error([] { LengthDistribution::parse_empirical("10,0\n20,0\n", "z.txt"); }).find("sum to 0"),
            std::string::npos);
}

TEST(LengthDistribution, SameSeedSameLengths) {
  const auto d = LengthDistribution::parse("lognormal:300,200");
  std::mt19937_64 a(42), b(42), c(43);
  std::vector<std::int64_t> va, vb, vc;
  for (int i = 0; i < 200; ++i) {
    va.push_back(d.sample(a));
    vb.push_back(d.sample(b));
    vc.push_back(d.sample(c));
  }
  EXPECT_EQ(va, vb);
  EXPECT_NE(va, vc);
}

TEST(LengthDistribution, BadStringsAreConfigErrorsNamingTheString) {
  for (const std::string spec :
       {"", "fixed", "fixed:abc", "fixed:0", "uniform:5", "uniform:5,1", "uniform:1,2,3", "normal:-1,2",
        "normal:1", "lognormal:100,-1", "gauss:1,2", "normal:1e999,1", "empirical:/nonexistent/llmload/x"}) {
    const std::string msg = config_error([&] { LengthDistribution::parse(spec); });
    EXPECT_NE(msg.find("\"" + spec + "\""), std::string::npos) << spec << " → " << msg;
  }
  const std::string msg = config_error([] { LengthDistribution::parse("gauss:1,2"); });
  EXPECT_NE(msg.find("normal:512,128"), std::string::npos) << "shows a correct example: " << msg;
}

TEST(LengthDistribution, AroundFollowsVllmRangeRatio) {
  EXPECT_EQ(LengthDistribution::around(100, 0.0).kind(), LengthDistribution::Kind::kFixed);
  const auto d = LengthDistribution::around(100, 0.5);
  ASSERT_EQ(d.kind(), LengthDistribution::Kind::kUniform);
  const Stats s = sample_stats(d, 8);
  EXPECT_EQ(s.min, 50);  // floor(100 * 0.5)
  EXPECT_EQ(s.max, 150);  // ceil(100 * 1.5)
  EXPECT_EQ(s.counts.size(), 101U);
  // A low end of 0 is clamped to 1.
  EXPECT_EQ(sample_stats(LengthDistribution::around(1, 0.9), 9, 2000).min, 1);
  EXPECT_FALSE(config_error([] { LengthDistribution::around(100, 1.0); }).empty());
  EXPECT_FALSE(config_error([] { LengthDistribution::around(100, -0.1); }).empty());
}

TEST(GenaiScenario, DeterministicNormalUniform) {
  const auto d = parse_genai_scenario("D(100,200)");
  EXPECT_EQ(d.input.kind(), LengthDistribution::Kind::kFixed);
  EXPECT_EQ(d.input.param_a(), 100);
  EXPECT_EQ(d.output.param_a(), 200);

  const auto n = parse_genai_scenario("N(480,240)/(300,150)");
  EXPECT_EQ(n.input.kind(), LengthDistribution::Kind::kNormal);
  EXPECT_EQ(n.input.param_a(), 480);
  EXPECT_EQ(n.input.param_b(), 240);
  EXPECT_EQ(n.output.param_a(), 300);
  EXPECT_EQ(n.output.param_b(), 150);

  const auto u = parse_genai_scenario("U(100,200)/(200,300)");
  EXPECT_EQ(u.input.kind(), LengthDistribution::Kind::kUniform);
  EXPECT_EQ(u.input.param_a(), 100);
  EXPECT_EQ(u.input.param_b(), 200);
  EXPECT_EQ(u.output.param_a(), 200);
  EXPECT_EQ(u.output.param_b(), 300);
  const Stats si = sample_stats(u.input, 10, 5000);
  EXPECT_GE(si.min, 100);
  EXPECT_LE(si.max, 200);
}

TEST(GenaiScenario, ShortUniformFormHoldsTheMaxima) {
  // genai-bench: U(in_max,out_max) samples input in [1, in_max] and output in [1, out_max].
  const auto u = parse_genai_scenario("U(1000,100)");
  EXPECT_EQ(u.input.param_a(), 1);
  EXPECT_EQ(u.input.param_b(), 1000);
  EXPECT_EQ(u.output.param_a(), 1);
  EXPECT_EQ(u.output.param_b(), 100);
}

TEST(GenaiScenario, BadStringsNameTheStringAndTheForms) {
  for (const std::string s : {"", "X(1,2)", "D(1,2)/(3,4)", "N(1,2)", "U(a,b)", "D(1.5,2)", "D(1,2", "D(-1,2)",
                              "N(0,1)/(1,1)", "U(5,1)/(1,2)", "E(1024)"}) {
    const std::string msg = config_error([&] { parse_genai_scenario(s); });
    EXPECT_NE(msg.find("\"" + s + "\""), std::string::npos) << s << " → " << msg;
    EXPECT_NE(msg.find("D(in,out)"), std::string::npos) << s << " → " << msg;
  }
}

}  // namespace
}  // namespace llmload
