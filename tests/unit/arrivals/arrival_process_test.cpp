// Inter-arrival processes of the server scenario: gamma (vLLM's --burstiness), constant, Poisson.

#include <gtest/gtest.h>

#include <cmath>

#include "llmload/loadgen/schedule.hpp"
#include "sim.hpp"

namespace llmload {
namespace {

using namespace std::chrono_literals;
using testing::gap_stats;

ScenarioConfig server(double rate, std::int64_t n, std::uint64_t seed, std::string process = "poisson",
                      double burstiness = 1.0) {
  ScenarioConfig c;
  c.kind = ScenarioKind::kServer;
  c.request_rate = rate;
  c.num_requests = n;
  c.seed = seed;
  c.arrivals.process = std::move(process);
  c.arrivals.burstiness = burstiness;
  c.validate();
  return c;
}

class GammaGaps : public ::testing::TestWithParam<double> {};

TEST_P(GammaGaps, MeanIsOneOverRateAndCvIsOneOverSqrtShape) {
  const double k = GetParam();
  const double rate = 20.0;
  const int n = 50'000;
  const auto s = build_schedule(server(rate, n, 11, "gamma", k));
  ASSERT_EQ(s.arrivals.size(), static_cast<std::size_t>(n));
  const auto st = gap_stats(s.arrivals);
  const double cv = 1.0 / std::sqrt(k);
  // Standard error of the mean: cv/sqrt(n) relative (0.9% at k = 0.25); allow about 4.5 of them.
  EXPECT_NEAR(st.mean * rate, 1.0, 4.5 * cv / std::sqrt(n)) << "k=" << k;
  // The sample CV of a gamma with small shape is noisy (kurtosis 6/k); allow 5% (k < 1) or 3%.
  EXPECT_NEAR(st.cv / cv, 1.0, k < 1 ? 0.05 : 0.03) << "k=" << k;
}

INSTANTIATE_TEST_SUITE_P(Shapes, GammaGaps, ::testing::Values(0.25, 1.0, 4.0));

TEST(GammaGaps, DeterministicBySeed) {
  const auto a = build_schedule(server(10, 2000, 5, "gamma", 0.5));
  const auto b = build_schedule(server(10, 2000, 5, "gamma", 0.5));
  const auto c = build_schedule(server(10, 2000, 6, "gamma", 0.5));
  EXPECT_EQ(a.arrivals, b.arrivals);
  EXPECT_NE(a.arrivals, c.arrivals);
  EXPECT_TRUE(std::is_sorted(a.arrivals.begin(), a.arrivals.end()));
}

TEST(GammaGaps, ShapeOneIsExactlyThePoissonSchedule) {
  // Gamma(1, 1/R) is Exp(1/R): the same seed gives the same schedule as poisson.
  const auto g = build_schedule(server(10, 3000, 9, "gamma", 1.0));
  const auto p = build_schedule(server(10, 3000, 9, "poisson"));
  EXPECT_EQ(g.arrivals, p.arrivals);
  EXPECT_NEAR(gap_stats(g.arrivals).cv, 1.0, 0.06);
}

TEST(GammaGaps, FixedAlgorithmGivesTheSameNumbersEverywhere) {
  // Golden values: mt19937_64 is specified bit for bit and our transforms use only IEEE
  // arithmetic plus log/sqrt/pow (whose last bit may differ between C libraries, hence the
  // tolerance). A change here changes every schedule published with a seed.
  ArrivalRng rng(42);
  EXPECT_EQ(rng.uniform(), 0x1.82a3befaddcbcp-1);
  EXPECT_NEAR(rng.exponential(), 0x1.04dad7f4d36f4p+0, 1e-12);
  EXPECT_NEAR(rng.normal(), 0x1.978762f4a05dcp-2, 1e-12);
  EXPECT_NEAR(rng.gamma(0.5), 0x1.0e47da09900a2p+0, 1e-12);
  EXPECT_NEAR(rng.gamma(4.0), 0x1.8da3cb200e30cp+1, 1e-12);
  const auto s = build_schedule(server(10, 3, 42, "gamma", 0.5));
  const std::vector<std::int64_t> golden = {13'782'427, 67'093'320, 110'205'280};
  ASSERT_EQ(s.arrivals.size(), golden.size());
  for (std::size_t i = 0; i < golden.size(); ++i) EXPECT_NEAR(s.arrivals[i].count(), golden[i], 1) << i;
}

TEST(ArrivalRng, GammaMomentsForSmallAndLargeShapes) {
  for (double k : {0.1, 0.5, 2.5, 30.0}) {
    ArrivalRng rng(3);
    const int n = 100'000;
    double sum = 0, sum2 = 0;
    for (int i = 0; i < n; ++i) {
      const double x = rng.gamma(k);
      ASSERT_GE(x, 0.0);
      sum += x;
      sum2 += x * x;
    }
    const double mean = sum / n;
    const double var = sum2 / n - mean * mean;
    EXPECT_NEAR(mean / k, 1.0, 5.0 / std::sqrt(k * n)) << "k=" << k;  // sd of the mean: sqrt(k/n)
    EXPECT_NEAR(var / k, 1.0, k < 1 ? 0.1 : 0.03) << "k=" << k;
  }
}

TEST(ArrivalRng, NormalHasMeanZeroAndUnitVariance) {
  ArrivalRng rng(8);
  const int n = 100'000;
  double sum = 0, sum2 = 0;
  for (int i = 0; i < n; ++i) {
    const double x = rng.normal();
    sum += x;
    sum2 += x * x;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.015);
  EXPECT_NEAR(sum2 / n, 1.0, 0.02);
}

TEST(ConstantGaps, AreExactlyOneOverRate) {
  const auto s = build_schedule(server(4, 1000, 1, "constant"));
  ASSERT_EQ(s.arrivals.size(), 1000u);
  for (std::size_t i = 0; i < s.arrivals.size(); ++i) EXPECT_EQ(s.arrivals[i], (i + 1) * Nanos(250ms)) << i;
  // A rate whose gap is not a whole number of nanoseconds does not drift: the k-th arrival is
  // k/R rounded, never the sum of rounded gaps.
  const auto t = build_schedule(server(3, 3000, 1, "constant"));
  EXPECT_EQ(t.arrivals[2999], Nanos(1000s));
  for (std::size_t i = 1; i < t.arrivals.size(); ++i) {
    EXPECT_LE(std::abs((t.arrivals[i] - t.arrivals[i - 1] - Nanos(333'333'333)).count()), 1) << i;
  }
  // And the seed does not matter.
  EXPECT_EQ(build_schedule(server(4, 100, 1, "constant")).arrivals, build_schedule(server(4, 100, 2, "constant")).arrivals);
}

TEST(PoissonGaps, MeanAndCvAndNoRescaling) {
  const double rate = 40;
  const auto s = build_schedule(server(rate, 40'000, 3));
  const auto st = gap_stats(s.arrivals);
  EXPECT_NEAR(st.mean * rate, 1.0, 0.025);
  EXPECT_NEAR(st.cv, 1.0, 0.025);
  EXPECT_NE(s.arrivals.back(), Nanos(1000s));  // not rescaled to end at N/rate
}

}  // namespace
}  // namespace llmload
