#pragma once
// The one rule for a measurement that the machine's other work can spoil but the code under test
// cannot make right (runs sharing 2 cores with a build beside them: a stall in one run lowers its
// throughput alone, or pushes a few requests past an SLO): when the first measurement is not as
// set up, it is measured once more and the second one is judged. Code that is wrong is wrong twice,
// so the test still fails for it; a stall that hits once does not fail the test.
//
//   const auto r = measured_twice("the strong-scaling runs",
//                                 [&](int attempt) { return measure(dirs[attempt]); },
//                                 [](const auto& r) { return scales_as_set_up(r); });
//
// `measure(attempt)` is called with 0, then (only if needed) 1: each attempt can write to a
// directory of its own. Whatever the first one found is said on stderr, named by `what`.

#include <iostream>
#include <string_view>
#include <utility>

namespace llmload::testing {

template <class Measure, class AsSetUp>
auto measured_twice(std::string_view what, Measure&& measure, AsSetUp&& as_set_up) {
  auto first = measure(0);
  if (as_set_up(first)) return first;
  std::cerr << what << ": not as set up the first time; measuring once more and judging the second\n";
  return measure(1);
}

}  // namespace llmload::testing
