// Fuzz target: the HdrHistogram codecs (histograms and .hlog files from other tools).
//
// The input is decoded four ways: as a V2 compressed histogram (raw bytes); as the same with a
// valid outer header and zlib stream built around it (so the fuzzer reaches the inner header and
// the counts payload directly); as base64 text; and as a whole .hlog file. Only HdrCodecError
// may escape a decoder. Every histogram that decodes is re-encoded (binary, base64, and as an
// .hlog interval) and must decode to an equal histogram; its statistics must be computable.

#include <zlib.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "llmload/analysis/hdr_codec.hpp"
#include "llmload/analysis/hdr_histogram.hpp"
#include "llmload/analysis/hdr_log.hpp"

namespace {

namespace an = llmload::analysis;

void check_histogram(const an::HdrHistogram& h) {
  FUZZ_CHECK(h.total_count() >= 0);
  FUZZ_CHECK(h.counts_length() <= an::kMaxDecodedCountsLength);
  // Statistics a reader computes from it.
  FUZZ_CHECK(h.min() <= h.max() || h.total_count() == 0);
  FUZZ_CHECK(h.value_at_percentile(50) <= h.value_at_percentile(99));
  FUZZ_CHECK(h.value_at_percentile(100) <= h.max() || h.total_count() == 0);
  FUZZ_CHECK(!std::isnan(h.mean()) && !std::isnan(h.stddev()));

  // Round trips.
  const std::vector<std::uint8_t> bin = an::encode_compressed(h);
  FUZZ_CHECK(an::decode_compressed(bin) == h);
  const std::string b64 = an::encode_base64(h);
  FUZZ_CHECK(b64.rfind("HISTF", 0) == 0);
  FUZZ_CHECK(an::decode_base64(b64) == h);
  // Encoding is canonical: a decoded re-encoding encodes to the same bytes.
  FUZZ_CHECK(an::encode_compressed(an::decode_compressed(bin)) == bin);
}

void check_hlog_roundtrip(const an::HlogFile& file) {
  std::ostringstream out;
  an::HlogWriter writer(out);
  writer.write_header("fuzz", file.start_time_sec.value_or(0.0));
  if (file.base_time_sec) writer.write_base_time(*file.base_time_sec);
  writer.write_legend();
  std::vector<std::size_t> written;
  for (std::size_t i = 0; i < file.intervals.size(); ++i) {
    const auto& iv = file.intervals[i];
    if (iv.tag && (iv.tag->empty() || iv.tag->find_first_of(", \r\n") != std::string::npos)) continue;
    writer.write_interval(iv.histogram, iv.start_sec, iv.length_sec,
                          iv.tag ? std::optional<std::string_view>(*iv.tag) : std::nullopt);
    written.push_back(i);
  }
  std::istringstream in(out.str());
  const an::HlogFile again = an::read_hlog(in);
  FUZZ_CHECK(again.intervals.size() == written.size());
  for (std::size_t k = 0; k < written.size(); ++k) {
    const auto& a = file.intervals[written[k]];
    const auto& b = again.intervals[k];
    FUZZ_CHECK(a.tag == b.tag);
    FUZZ_CHECK(a.histogram == b.histogram);
  }
}

}  // namespace

// Decodes with `decode`; only HdrCodecError may escape it. The checks run outside the try, so
// that a round trip failing with HdrCodecError is a crash, not a rejected input.
template <class F>
std::optional<an::HdrHistogram> try_decode(F&& decode) {
  try {
    return decode();
  } catch (const an::HdrCodecError&) {
    return std::nullopt;
  }
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  // 1. Raw V2 compressed bytes.
  if (auto h = try_decode([&] { return an::decode_compressed(bytes); })) check_histogram(*h);

  // 2. The input as the inflated content: cookie 0x1c849314, length, zlib(input).
  uLongf bound = compressBound(static_cast<uLong>(size));
  std::vector<std::uint8_t> wrapped(8 + bound);
  if (compress2(wrapped.data() + 8, &bound, data, static_cast<uLong>(size), 1) == Z_OK) {
    wrapped.resize(8 + bound);
    const std::uint32_t cookie = 0x1c849314;
    const auto len = static_cast<std::uint32_t>(bound);
    for (std::size_t i = 0; i < 4; ++i) {
      wrapped[i] = static_cast<std::uint8_t>(cookie >> (24 - 8 * i));
      wrapped[4 + i] = static_cast<std::uint8_t>(len >> (24 - 8 * i));
    }
    if (auto h = try_decode([&] { return an::decode_compressed(wrapped); })) check_histogram(*h);
  }

  // 3. Base64 text.
  if (auto h = try_decode([&] { return an::decode_base64(text); })) check_histogram(*h);

  // 4. A whole .hlog file.
  std::optional<an::HlogFile> file;
  try {
    std::istringstream in{std::string(text)};
    file = an::read_hlog(in);
  } catch (const an::HdrCodecError&) {
  }
  if (file) {
    for (const auto& iv : file->intervals) check_histogram(iv.histogram);
    check_hlog_roundtrip(*file);
  }
  return 0;
}
