#pragma once
// HdrHistogram V2 compressed encoding (the "HISTF..." base64 strings of .hlog files), compatible
// with HdrHistogram Java (encodeIntoCompressedByteBuffer / decodeFromCompressedByteBuffer),
// HdrHistogram_c and hdr-histogram-js.
//
// Wire format (big-endian): int32 cookie 0x1c849314, int32 compressed length, zlib stream of
// [int32 cookie 0x1c849313, int32 payload length, int32 normalizingIndexOffset, int32
// significant digits, int64 lowest, int64 highest, int64 double bits of the conversion ratio,
// payload]. The payload is counts[0 .. index(max)] as ZigZag LEB128 (9th byte carries 8 bits):
// a positive value is a count, -k is a run of k empty buckets, 0 a single empty bucket.

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "llmload/analysis/hdr_histogram.hpp"

namespace llmload::analysis {

/// Malformed encoded histogram or log; the message says what is wrong (and where, for logs).
class HdrCodecError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Largest counts array a decoder will allocate (2^21 counts, 16 MiB), so that a few hostile
/// bytes cannot demand more. Every layout with up to 4 significant figures fits, at any range;
/// with 5 significant figures, those with highest_trackable < 2^32 (71 minutes in us).
inline constexpr std::size_t kMaxDecodedCountsLength = std::size_t{1} << 21;

/// V2 compressed encoding, byte-identical to Java's encodeIntoCompressedByteBuffer(buf, 9) with
/// the same zlib: deflate level 9, a single empty bucket written as 0, runs as -k,
/// normalizingIndexOffset 0 and conversion ratio 1.0.
std::vector<std::uint8_t> encode_compressed(const HdrHistogram& histogram);

/// Decodes a V2 compressed histogram. Tolerant of fields that do not change the counts
/// (normalizingIndexOffset, conversion ratio, word-size bits of the cookies, the zlib level).
/// Throws HdrCodecError on anything else that is malformed: other cookies (V0/V1, uncompressed),
/// lengths that disagree with the data, a corrupt or truncated zlib stream, trailing bytes,
/// invalid histogram parameters, a counts array over kMaxDecodedCountsLength, counts past the end
/// of the array, negative or overflowing counts. Memory use is bounded by the declared layout.
HdrHistogram decode_compressed(std::span<const std::uint8_t> data);

/// Standard base64 (RFC 4648 alphabet, '=' padding).
std::string to_base64(std::span<const std::uint8_t> bytes);
/// Strict standard base64: length a multiple of 4, padding only at the end, no whitespace.
/// Throws HdrCodecError naming the offending position.
std::vector<std::uint8_t> from_base64(std::string_view text);

/// to_base64(encode_compressed(h)): always starts with "HISTF".
std::string encode_base64(const HdrHistogram& histogram);
/// decode_compressed(from_base64(text)).
HdrHistogram decode_base64(std::string_view text);

}  // namespace llmload::analysis
