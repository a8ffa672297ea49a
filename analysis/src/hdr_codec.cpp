#include "llmload/analysis/hdr_codec.hpp"

#include <zlib.h>

#include <array>
#include <bit>
#include <limits>

namespace llmload::analysis {
namespace {

constexpr std::uint32_t kV2EncodingCookie = 0x1c849313;          // uncompressed V2, word size bits 0x10
constexpr std::uint32_t kV2CompressedCookie = 0x1c849314;        // compressed V2
constexpr std::uint32_t kCookieBaseMask = ~std::uint32_t{0xf0};  // decoders ignore the word-size bits
constexpr std::uint32_t kV2EncodingBase = 0x1c849303;
constexpr std::uint32_t kV2CompressedBase = 0x1c849304;
constexpr std::uint32_t kV1EncodingBase = 0x1c849301;
constexpr std::uint32_t kV1CompressedBase = 0x1c849302;
constexpr std::uint32_t kV0EncodingBase = 0x1c849308;
constexpr std::uint32_t kV0CompressedBase = 0x1c849309;
constexpr std::size_t kInnerHeaderSize = 40;
constexpr std::size_t kOuterHeaderSize = 8;
constexpr std::size_t kMaxZigZagBytes = 9;

std::string hex32(std::uint32_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s = "0x00000000";
  for (int i = 9; i >= 2; --i, v >>= 4) s[static_cast<std::size_t>(i)] = kDigits[v & 0xf];
  return s;
}

void put_u32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(v >> shift));
}
void put_u64(std::vector<std::uint8_t>& out, std::uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(v >> shift));
}
void set_u32(std::vector<std::uint8_t>& out, std::size_t at, std::uint32_t v) {
  for (std::size_t i = 0; i < 4; ++i) out[at + i] = static_cast<std::uint8_t>(v >> (24 - 8 * i));
}
std::uint64_t get_be(std::span<const std::uint8_t> in, std::size_t at, std::size_t width) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < width; ++i) v = (v << 8) | in[at + i];
  return v;
}

// ZigZag, then LEB128 with at most 9 bytes (the 9th carries 8 bits), as ZigZagEncoding.putLong.
void put_zigzag(std::vector<std::uint8_t>& out, std::int64_t value) {
  std::uint64_t v = (static_cast<std::uint64_t>(value) << 1) ^ static_cast<std::uint64_t>(value >> 63);
  for (std::size_t i = 0; i < kMaxZigZagBytes - 1; ++i) {
    if ((v >> 7) == 0) {
      out.push_back(static_cast<std::uint8_t>(v));
      return;
    }
    out.push_back(static_cast<std::uint8_t>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<std::uint8_t>(v));  // 9th byte: the remaining 8 bits
}

// Incremental ZigZag LEB128-64b9B reader (values may straddle inflate output chunks).
class ZigZagReader {
 public:
  // Feeds one byte; returns true when a value is complete (then value() holds it).
  bool feed(std::uint8_t b) {
    if (bytes_ < kMaxZigZagBytes - 1) {
      acc_ |= static_cast<std::uint64_t>(b & 0x7f) << (7 * bytes_);
      ++bytes_;
      if ((b & 0x80) != 0) return false;
    } else {
      acc_ |= static_cast<std::uint64_t>(b) << 56;
    }
    value_ = static_cast<std::int64_t>((acc_ >> 1) ^ (~(acc_ & 1) + 1));
    acc_ = 0;
    bytes_ = 0;
    return true;
  }
  bool mid_value() const { return bytes_ != 0; }
  std::int64_t value() const { return value_; }

 private:
  std::uint64_t acc_ = 0;
  std::size_t bytes_ = 0;
  std::int64_t value_ = 0;
};

// Applies decoded payload entries to a histogram, enforcing array bounds and count sanity.
class CountsFiller {
 public:
  explicit CountsFiller(HdrHistogram& h) : h_(h), length_(h.counts_length()) {}
  void apply(std::int64_t entry) {
    if (entry > 0) {
      if (index_ >= length_) {
        throw HdrCodecError("histogram payload: count at index " + std::to_string(index_) +
                            " is past the end of the counts array (length " + std::to_string(length_) + ")");
      }
      std::int64_t sum = 0;
      if (__builtin_add_overflow(total_, entry, &sum)) {
        throw HdrCodecError("histogram payload: total count overflows 64 bits");
      }
      total_ = sum;
      h_.add_count_at_index(index_, entry);
      ++index_;
      return;
    }
    if (entry == std::numeric_limits<std::int64_t>::min()) {
      throw HdrCodecError("histogram payload: invalid zero-run length");
    }
    const auto run = static_cast<std::uint64_t>(entry == 0 ? 1 : -entry);
    if (run > length_ - index_) {
      throw HdrCodecError("histogram payload: run of " + std::to_string(run) + " empty buckets at index " +
                          std::to_string(index_) + " passes the end of the counts array (length " +
                          std::to_string(length_) + ")");
    }
    index_ += static_cast<std::size_t>(run);
  }

 private:
  HdrHistogram& h_;
  std::size_t length_;
  std::size_t index_ = 0;
  std::int64_t total_ = 0;
};

// Owns a zlib inflate stream.
class Inflater {
 public:
  explicit Inflater(std::span<const std::uint8_t> in) {
    if (inflateInit(&zs_) != Z_OK) throw HdrCodecError("zlib: inflateInit failed");
    // zlib's API takes a non-const pointer but never writes through next_in.
    zs_.next_in = const_cast<Bytef*>(in.data());
    zs_.avail_in = static_cast<uInt>(in.size());
  }
  ~Inflater() { inflateEnd(&zs_); }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;

  // Inflates into `out`; returns bytes written (0 only at the end of the stream). Throws on a
  // corrupt or truncated stream.
  std::size_t read(std::span<std::uint8_t> out) {
    if (done_) return 0;
    zs_.next_out = out.data();
    zs_.avail_out = static_cast<uInt>(out.size());
    const int rc = inflate(&zs_, Z_NO_FLUSH);
    const std::size_t produced = out.size() - zs_.avail_out;
    if (rc == Z_STREAM_END) {
      done_ = true;
    } else if (rc == Z_BUF_ERROR && produced == 0) {
      throw HdrCodecError("zlib: compressed data is truncated");
    } else if (rc != Z_OK) {
      throw HdrCodecError(std::string("zlib: corrupt compressed data (") + (zs_.msg ? zs_.msg : "error") + ")");
    }
    return produced;
  }
  bool done() const { return done_; }
  std::size_t unused_input() const { return zs_.avail_in; }

 private:
  z_stream zs_{};
  bool done_ = false;
};

// Reads exactly out.size() bytes unless the stream ends first; returns the count read.
std::size_t read_fully(Inflater& inf, std::span<std::uint8_t> out) {
  std::size_t got = 0;
  while (got < out.size()) {
    const std::size_t n = inf.read(out.subspan(got));
    if (n == 0 && inf.done()) break;
    got += n;
  }
  return got;
}

std::vector<std::uint8_t> encode_inner(const HdrHistogram& h) {
  std::vector<std::uint8_t> out;
  out.reserve(kInnerHeaderSize + 64);
  put_u32(out, kV2EncodingCookie);
  put_u32(out, 0);  // payload length, set below
  put_u32(out, 0);  // normalizingIndexOffset
  put_u32(out, static_cast<std::uint32_t>(h.significant_figures()));
  put_u64(out, static_cast<std::uint64_t>(h.lowest_discernible()));
  put_u64(out, static_cast<std::uint64_t>(h.highest_trackable()));
  put_u64(out, std::bit_cast<std::uint64_t>(1.0));  // integer-to-double conversion ratio
  // counts[0 .. index(max)]: max() is 0 when empty, so an empty histogram writes one entry.
  const std::size_t limit = h.index_of(h.max()) + 1;
  std::size_t i = 0;
  while (i < limit) {
    const std::int64_t count = h.count_at_index(i++);
    if (count != 0) {
      put_zigzag(out, count);
      continue;
    }
    std::int64_t zeros = 1;
    while (i < limit && h.count_at_index(i) == 0) {
      ++zeros;
      ++i;
    }
    put_zigzag(out, zeros > 1 ? -zeros : 0);  // Java writes a single empty bucket as 0
  }
  set_u32(out, 4, static_cast<std::uint32_t>(out.size() - kInnerHeaderSize));
  return out;
}

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

std::vector<std::uint8_t> encode_compressed(const HdrHistogram& histogram) {
  const std::vector<std::uint8_t> inner = encode_inner(histogram);
  uLongf bound = compressBound(static_cast<uLong>(inner.size()));
  std::vector<std::uint8_t> out(kOuterHeaderSize + bound);
  // compress2 = deflateInit(level) + deflate(Z_FINISH): the same parameters (window 15, memLevel
  // 8, default strategy) as java.util.zip.Deflater(9), hence the same bytes with the same zlib.
  if (compress2(out.data() + kOuterHeaderSize, &bound, inner.data(), static_cast<uLong>(inner.size()), 9) != Z_OK) {
    throw HdrCodecError("zlib: compress2 failed");
  }
  out.resize(kOuterHeaderSize + bound);
  set_u32(out, 0, kV2CompressedCookie);
  set_u32(out, 4, static_cast<std::uint32_t>(bound));
  return out;
}

HdrHistogram decode_compressed(std::span<const std::uint8_t> data) {
  if (data.size() < kOuterHeaderSize) {
    throw HdrCodecError("compressed histogram: " + std::to_string(data.size()) +
                        " bytes, shorter than the 8-byte header");
  }
  const auto cookie = static_cast<std::uint32_t>(get_be(data, 0, 4));
  const std::uint32_t base = cookie & kCookieBaseMask;
  if (base != kV2CompressedBase) {
    std::string what = "bad cookie " + hex32(cookie) + " (expected V2 compressed " + hex32(kV2CompressedCookie) + ")";
    if (base == kV2EncodingBase) what = "uncompressed V2 histogram " + hex32(cookie) + "; expected the compressed form";
    if (base == kV1CompressedBase || base == kV1EncodingBase || base == kV0CompressedBase || base == kV0EncodingBase) {
      what = "unsupported pre-V2 encoding (cookie " + hex32(cookie) + ")";
    }
    throw HdrCodecError("compressed histogram: " + what);
  }
  const auto declared = static_cast<std::int32_t>(get_be(data, 4, 4));
  const std::size_t available = data.size() - kOuterHeaderSize;
  if (declared <= 0 || static_cast<std::size_t>(declared) != available) {
    throw HdrCodecError("compressed histogram: header declares " + std::to_string(declared) + " compressed bytes but " +
                        std::to_string(available) + " follow");
  }

  Inflater inf(data.subspan(kOuterHeaderSize));
  std::array<std::uint8_t, kInnerHeaderSize> header{};
  if (read_fully(inf, header) != header.size()) {
    throw HdrCodecError("compressed histogram: inflated data is shorter than the 40-byte header");
  }
  const auto inner_cookie = static_cast<std::uint32_t>(get_be(header, 0, 4));
  if ((inner_cookie & kCookieBaseMask) != kV2EncodingBase) {
    throw HdrCodecError("compressed histogram: bad inner cookie " + hex32(inner_cookie) + " (expected " +
                        hex32(kV2EncodingCookie) + ")");
  }
  const auto payload_length = static_cast<std::int32_t>(get_be(header, 4, 4));
  // header[8..12) normalizingIndexOffset and [32..40) the conversion ratio do not change the
  // counts' logical order or values, and writers disagree on them (hdr-histogram-js writes 1, 1).
  const auto sig = static_cast<std::int32_t>(get_be(header, 12, 4));
  const auto lowest = static_cast<std::int64_t>(get_be(header, 16, 8));
  const auto highest = static_cast<std::int64_t>(get_be(header, 24, 8));
  std::size_t counts_length = 0;
  try {
    counts_length = HdrHistogram::counts_length_for(lowest, highest, sig);
  } catch (const std::invalid_argument& e) {
    throw HdrCodecError(std::string("compressed histogram: invalid parameters: ") + e.what());
  }
  if (counts_length > kMaxDecodedCountsLength) {
    throw HdrCodecError("compressed histogram: counts array of " + std::to_string(counts_length) +
                        " exceeds the decoder limit of " + std::to_string(kMaxDecodedCountsLength));
  }
  if (payload_length <= 0 || static_cast<std::uint64_t>(payload_length) > counts_length * kMaxZigZagBytes) {
    throw HdrCodecError("compressed histogram: implausible payload length " + std::to_string(payload_length));
  }

  HdrHistogram h(lowest, highest, sig);
  CountsFiller filler(h);
  ZigZagReader zz;
  std::array<std::uint8_t, 16384> chunk{};
  std::size_t remaining = static_cast<std::size_t>(payload_length);
  while (true) {
    const std::size_t n = inf.read(chunk);
    if (n == 0 && inf.done()) break;
    if (n > remaining) {
      throw HdrCodecError("compressed histogram: inflated payload is longer than the declared " +
                          std::to_string(payload_length) + " bytes");
    }
    remaining -= n;
    for (std::size_t i = 0; i < n; ++i) {
      if (zz.feed(chunk[i])) filler.apply(zz.value());
    }
  }
  if (remaining != 0) {
    throw HdrCodecError("compressed histogram: inflated payload is " + std::to_string(remaining) +
                        " bytes shorter than the declared " + std::to_string(payload_length));
  }
  if (zz.mid_value()) throw HdrCodecError("compressed histogram: payload ends inside a varint");
  if (inf.unused_input() != 0) {
    throw HdrCodecError("compressed histogram: " + std::to_string(inf.unused_input()) +
                        " bytes after the end of the zlib stream");
  }
  return h;
}

std::string to_base64(std::span<const std::uint8_t> bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t v = (std::uint32_t{bytes[i]} << 16) | (std::uint32_t{bytes[i + 1]} << 8) | bytes[i + 2];
    for (int shift = 18; shift >= 0; shift -= 6) out.push_back(kAlphabet[(v >> shift) & 63]);
  }
  if (const std::size_t rest = bytes.size() - i; rest > 0) {
    std::uint32_t v = std::uint32_t{bytes[i]} << 16;
    if (rest == 2) v |= std::uint32_t{bytes[i + 1]} << 8;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(rest == 2 ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::vector<std::uint8_t> from_base64(std::string_view text) {
  if (text.size() % 4 != 0) {
    throw HdrCodecError("base64: length " + std::to_string(text.size()) + " is not a multiple of 4");
  }
  std::size_t padding = 0;
  if (!text.empty() && text.back() == '=') padding = (text[text.size() - 2] == '=') ? 2 : 1;
  std::vector<std::uint8_t> out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    std::uint32_t v = 0;
    const bool last = i + 4 == text.size();
    for (std::size_t j = 0; j < 4; ++j) {
      const char c = text[i + j];
      int d = base64_value(c);
      if (d < 0 && c == '=' && last && j >= 4 - padding) d = 0;
      if (d < 0) throw HdrCodecError("base64: invalid character at position " + std::to_string(i + j));
      v = (v << 6) | static_cast<std::uint32_t>(d);
    }
    out.push_back(static_cast<std::uint8_t>(v >> 16));
    if (!last || padding < 2) out.push_back(static_cast<std::uint8_t>(v >> 8));
    if (!last || padding < 1) out.push_back(static_cast<std::uint8_t>(v));
  }
  return out;
}

std::string encode_base64(const HdrHistogram& histogram) { return to_base64(encode_compressed(histogram)); }

HdrHistogram decode_base64(std::string_view text) { return decode_compressed(from_base64(text)); }

}  // namespace llmload::analysis
