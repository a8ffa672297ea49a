#pragma once
// Shared by the libFuzzer targets: an always-on assertion (fuzz builds may define NDEBUG) that
// prints what was violated and aborts, which libFuzzer reports as a crash with a reproducer.

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond)                                                                       \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      std::fprintf(stderr, "FUZZ_CHECK failed: %s at %s:%d\n", #cond, __FILE__, __LINE__);    \
      std::abort();                                                                            \
    }                                                                                          \
  } while (false)
