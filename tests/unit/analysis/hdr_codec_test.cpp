// V2 compressed encoding and base64: exact bytes, round trips, tolerance of other writers'
// header fields, and rejection of malformed input with HdrCodecError.

#include "llmload/analysis/hdr_codec.hpp"
#include "hdr_test_vectors.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <bit>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using llmload::analysis::decode_base64;
using llmload::analysis::decode_compressed;
using llmload::analysis::encode_base64;
using llmload::analysis::encode_compressed;
using llmload::analysis::from_base64;
using llmload::analysis::HdrCodecError;
using llmload::analysis::HdrHistogram;
using llmload::analysis::to_base64;
using Bytes = std::vector<std::uint8_t>;

using llmload::analysis::testing::mixed;

void put_be(Bytes& out, std::uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

// ZigZag LEB128 as the V2 payload uses it (test-side encoder, kept independent of the library).
void put_varint(Bytes& out, std::int64_t value) {
  std::uint64_t v = (static_cast<std::uint64_t>(value) << 1) ^ static_cast<std::uint64_t>(value >> 63);
  for (int i = 0; i < 8 && (v >> 7) != 0; ++i, v >>= 7) out.push_back(static_cast<std::uint8_t>((v & 0x7f) | 0x80));
  out.push_back(static_cast<std::uint8_t>(v));
}

struct Inner {
  std::uint32_t cookie = 0x1c849313;
  std::int64_t payload_length = -1;  // -1: the actual payload size
  std::uint32_t normalizing_offset = 0;
  std::uint32_t sig = 3;
  std::int64_t lowest = 1;
  std::int64_t highest = 3'600'000'000;
  std::uint64_t ratio_bits = std::bit_cast<std::uint64_t>(1.0);
  Bytes payload;
  Bytes bytes() const {
    Bytes out;
    put_be(out, cookie, 4);
    const std::int64_t length = payload_length < 0 ? static_cast<std::int64_t>(payload.size()) : payload_length;
    put_be(out, static_cast<std::uint64_t>(length), 4);
    put_be(out, normalizing_offset, 4);
    put_be(out, sig, 4);
    put_be(out, static_cast<std::uint64_t>(lowest), 8);
    put_be(out, static_cast<std::uint64_t>(highest), 8);
    put_be(out, ratio_bits, 8);
    out.insert(out.end(), payload.begin(), payload.end());
    return out;
  }
};

Bytes zlib_compress(const Bytes& raw, int level) {
  uLongf len = compressBound(static_cast<uLong>(raw.size()));
  Bytes out(len);
  EXPECT_EQ(compress2(out.data(), &len, raw.data(), static_cast<uLong>(raw.size()), level), Z_OK);
  out.resize(len);
  return out;
}

Bytes wrap(const Bytes& inner, int level = 9, std::uint32_t cookie = 0x1c849314) {
  const Bytes z = zlib_compress(inner, level);
  Bytes out;
  put_be(out, cookie, 4);
  put_be(out, z.size(), 4);
  out.insert(out.end(), z.begin(), z.end());
  return out;
}

Bytes inflate_inner(const Bytes& encoded) {
  Bytes out(1 << 20);
  uLongf len = out.size();
  EXPECT_EQ(uncompress(out.data(), &len, encoded.data() + 8, static_cast<uLong>(encoded.size() - 8)), Z_OK);
  out.resize(len);
  return out;
}

std::string decode_error(const Bytes& data) {
  try {
    (void)decode_compressed(data);
  } catch (const HdrCodecError& e) {
    return e.what();
  }
  return "<decoded>";
}

void expect_same(const HdrHistogram& a, const HdrHistogram& b) {
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.total_count(), b.total_count());
  EXPECT_EQ(a.min(), b.min());
  EXPECT_EQ(a.max(), b.max());
  for (std::size_t i = 0; i < a.counts_length(); ++i) ASSERT_EQ(a.count_at_index(i), b.count_at_index(i)) << i;
}

TEST(hdr_codec, MixedVectorHasReferencePayload) {
  const Bytes enc = encode_compressed(mixed());
  ASSERT_GT(enc.size(), 10u);
  EXPECT_EQ(Bytes(enc.begin(), enc.begin() + 4), (Bytes{0x1c, 0x84, 0x93, 0x14}));
  EXPECT_EQ(Bytes(enc.begin() + 8, enc.begin() + 10), (Bytes{0x78, 0xda}));  // zlib, level 9
  const std::uint32_t declared = (std::uint32_t{enc[4]} << 24) | (std::uint32_t{enc[5]} << 16) | (enc[6] << 8) | enc[7];
  EXPECT_EQ(declared, enc.size() - 8);
  const Bytes inner = inflate_inner(enc);
  const Bytes payload = {0x02, 0x07, 0x04, 0xa9, 0x9d, 0x02, 0x02, 0x97, 0x45, 0xd8, 0x04};
  Inner expected;
  expected.payload = payload;
  EXPECT_EQ(inner, expected.bytes());
}

TEST(hdr_codec, ByteIdenticalToJava) {
  // Java 2.1.11 encodeIntoCompressedByteBuffer(buf, 9) with Debian bookworm's zlib 1.2.13, which
  // is also what we link: same deflate parameters and input give the same bytes.
  EXPECT_EQ(encode_base64(mixed()), "HISTFAAAACt42pNpmSzMwMDAzQABzFCaEURcm7yEwf4DRICJnWXlXCam6a43WACTkweh");
  EXPECT_EQ(encode_base64(HdrHistogram()), "HISTFAAAAB942pNpmSzMwMDAyAABzFAazL82eQmD/QeoCABVgwSI");
}

TEST(hdr_codec, DecodesJavaEncoding) {
  expect_same(decode_base64("HISTFAAAACt42pNpmSzMwMDAzQABzFCaEURcm7yEwf4DRICJnWXlXCam6a43WACTkweh"), mixed());
  expect_same(decode_base64("HISTFAAAAB942pNpmSzMwMDAyAABzFAazL82eQmD/QeoCABVgwSI"), HdrHistogram());
}

TEST(hdr_codec, SingleEmptyBucketIsWrittenAsZero) {
  HdrHistogram h;
  h.record(0);
  h.record(2, 3);  // index 1 empty: a single zero
  h.record(10);    // indices 3..9 empty: a run of 7
  const Bytes inner = inflate_inner(encode_compressed(h));
  EXPECT_EQ(Bytes(inner.begin() + 40, inner.end()), (Bytes{0x02, 0x00, 0x06, 0x0d, 0x02}));
  HdrHistogram only_zero;
  only_zero.record(0, 5);
  const Bytes inner0 = inflate_inner(encode_compressed(only_zero));
  EXPECT_EQ(Bytes(inner0.begin() + 40, inner0.end()), (Bytes{0x0a}));
  const Bytes empty = inflate_inner(encode_compressed(HdrHistogram()));
  EXPECT_EQ(Bytes(empty.begin() + 40, empty.end()), (Bytes{0x00}));
}

TEST(hdr_codec, RoundTripPreservesEveryCount) {
  std::mt19937_64 rng(99);
  for (const auto& proto : {HdrHistogram(1, 3'600'000'000, 3), HdrHistogram(1000, 3'600'000'000, 2),
                            HdrHistogram(1, std::numeric_limits<std::int64_t>::max(), 3),
                            HdrHistogram(1, 100'000'000, 5), HdrHistogram(7, 1'000'000, 1)}) {
    HdrHistogram h = proto;
    for (int i = 0; i < 3000; ++i) {
      const auto v =
          static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(h.highest_trackable()) >> (rng() % 40));
      ASSERT_TRUE(h.record(v, static_cast<std::int64_t>(1 + rng() % 1000)));
    }
    h.record(h.highest_trackable(), std::int64_t{1} << 40);  // large counts use long varints
    h.record(0);
    const HdrHistogram back = decode_compressed(encode_compressed(h));
    expect_same(back, h);
    EXPECT_EQ(back.lowest_discernible(), h.lowest_discernible());
    EXPECT_EQ(back.highest_trackable(), h.highest_trackable());
    EXPECT_EQ(back.significant_figures(), h.significant_figures());
    EXPECT_EQ(back.mean(), h.mean());
    EXPECT_EQ(decode_base64(encode_base64(h)), h);
    EXPECT_EQ(encode_base64(h).substr(0, 5), "HISTF");
  }
}

TEST(hdr_codec, RoundTripOfEmptyAndNineByteVarints) {
  expect_same(decode_compressed(encode_compressed(HdrHistogram())), HdrHistogram());
  HdrHistogram h;
  h.record(3, std::numeric_limits<std::int64_t>::max() / 2);  // ZigZag needs all 9 bytes
  expect_same(decode_compressed(encode_compressed(h)), h);
}

TEST(hdr_codec, AcceptsHdrHistogramJsHeaderFields) {
  // hdr-histogram-js writes normalizingIndexOffset = 1, ratio bits 1 and zlib level 6 (78 9C).
  Inner in;
  in.normalizing_offset = 1;
  in.ratio_bits = 1;
  in.payload = {0x02, 0x07, 0x04, 0xa9, 0x9d, 0x02, 0x02, 0x97, 0x45, 0xd8, 0x04};
  const Bytes enc = wrap(in.bytes(), 6);
  EXPECT_EQ(enc[8], 0x78);
  EXPECT_EQ(enc[9], 0x9c);
  expect_same(decode_compressed(enc), mixed());
  // C writes single zeros as -1; other cookie word-size bits are ignored, as Java does.
  in.payload = {0x02, 0x01, 0x06};
  in.cookie = 0x1c849323;
  HdrHistogram expected;
  expected.record(0);
  expected.record(2, 3);
  expect_same(decode_compressed(wrap(in.bytes(), 9, 0x1c849324)), expected);
}

TEST(hdr_codec, RejectsBadOuterHeader) {
  const Bytes good = encode_compressed(mixed());
  EXPECT_NE(decode_error({}).find("shorter than the 8-byte header"), std::string::npos);
  EXPECT_NE(decode_error(Bytes(good.begin(), good.begin() + 7)).find("8-byte header"), std::string::npos);
  Bytes bad = good;
  bad[0] = 0x12;
  EXPECT_NE(decode_error(bad).find("bad cookie 0x12849314"), std::string::npos);
  bad = good;
  bad[3] = 0x02;  // V1 compressed
  EXPECT_NE(decode_error(bad).find("pre-V2"), std::string::npos);
  bad = good;
  bad[3] = 0x13;  // uncompressed V2
  EXPECT_NE(decode_error(bad).find("uncompressed"), std::string::npos);
  for (const std::uint8_t len0 : {0x7f, 0xff}) {  // huge / negative declared lengths
    bad = good;
    bad[4] = len0;
    EXPECT_NE(decode_error(bad).find("compressed bytes but"), std::string::npos);
  }
  bad = good;
  bad.push_back(0);  // trailing byte not covered by the declared length
  EXPECT_NE(decode_error(bad).find("compressed bytes but"), std::string::npos);
}

TEST(hdr_codec, EveryTruncationIsRejected) {
  const Bytes good = encode_compressed(mixed());
  for (std::size_t n = 0; n < good.size(); ++n) {
    Bytes cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_THROW((void)decode_compressed(cut), HdrCodecError) << n;
    if (n > 8) {  // also with the declared length fixed up: a truncated zlib stream
      const auto len = static_cast<std::uint32_t>(n - 8);
      cut[4] = static_cast<std::uint8_t>(len >> 24);
      cut[5] = static_cast<std::uint8_t>(len >> 16);
      cut[6] = static_cast<std::uint8_t>(len >> 8);
      cut[7] = static_cast<std::uint8_t>(len);
      EXPECT_THROW((void)decode_compressed(cut), HdrCodecError) << n;
    }
  }
}

TEST(hdr_codec, RandomCorruptionNeverCrashes) {
  HdrHistogram h;
  for (std::int64_t v = 1; v < 3'000'000'000; v = v * 3 + 1) h.record(v, v % 17 + 1);
  const Bytes good = encode_compressed(h);
  std::mt19937_64 rng(5);
  int rejected = 0;
  for (int i = 0; i < 4000; ++i) {
    Bytes bad = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) bad[8 + rng() % (bad.size() - 8)] ^= static_cast<std::uint8_t>(1 + rng() % 255);
    try {
      (void)decode_compressed(bad);
    } catch (const HdrCodecError&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 3900);  // zlib's adler32 catches nearly all corruption
}

TEST(hdr_codec, CorruptInnerDataNeverCrashes) {
  // Corrupt the inflated header and payload, then re-compress validly: this gets past zlib's
  // checksum and exercises the header checks and the varint/counts decoder.
  HdrHistogram h;
  for (std::int64_t v = 1; v < 3'000'000'000; v = v * 3 + 1) h.record(v, v % 17 + 1);
  const Bytes inner = inflate_inner(encode_compressed(h));
  std::mt19937_64 rng(11);
  int decoded = 0, rejected = 0;
  for (int i = 0; i < 3000; ++i) {
    Bytes bad = inner;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f) bad[rng() % bad.size()] ^= static_cast<std::uint8_t>(1 + rng() % 255);
    if (rng() % 4 == 0) bad.resize(rng() % bad.size());
    try {
      const HdrHistogram back = decode_compressed(wrap(bad, 1));
      EXPECT_LE(back.counts_length(), llmload::analysis::kMaxDecodedCountsLength);
      ++decoded;
    } catch (const HdrCodecError&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 1000);
  EXPECT_GT(decoded, 100);  // e.g. changed counts still decode
}

TEST(hdr_codec, RejectsBadInnerHeader) {
  Inner in;
  in.payload = {0x02};
  in.cookie = 0x1c849314;
  EXPECT_NE(decode_error(wrap(in.bytes())).find("bad inner cookie"), std::string::npos);
  in = Inner{};
  in.payload = {0x02};
  in.sig = 0;
  EXPECT_NE(decode_error(wrap(in.bytes())).find("significant_figures"), std::string::npos);
  in.sig = 3;
  in.lowest = 0;
  EXPECT_NE(decode_error(wrap(in.bytes())).find("lowest_discernible"), std::string::npos);
  in.lowest = 100;
  in.highest = 150;
  EXPECT_NE(decode_error(wrap(in.bytes())).find("highest_trackable"), std::string::npos);
  in = Inner{};
  in.payload = {0x02};
  in.sig = 5;
  in.highest = std::numeric_limits<std::int64_t>::max();  // 5.9 M counts: over the decoder limit
  EXPECT_NE(decode_error(wrap(in.bytes())).find("exceeds the decoder limit"), std::string::npos);
  in = Inner{};
  in.payload = {0x02};
  in.payload_length = 0;
  EXPECT_NE(decode_error(wrap(in.bytes())).find("implausible payload length"), std::string::npos);
  in.payload_length = 0x7fffffff;
  EXPECT_NE(decode_error(wrap(in.bytes())).find("implausible payload length"), std::string::npos);
  const Bytes full = in.bytes();
  const Bytes header_only(full.begin(), full.begin() + 20);
  EXPECT_NE(decode_error(wrap(header_only)).find("40-byte header"), std::string::npos);
}

TEST(hdr_codec, RejectsPayloadThatDisagreesWithItsLength) {
  Inner in;
  in.payload = {0x02, 0x04, 0x06};
  in.payload_length = 2;
  EXPECT_NE(decode_error(wrap(in.bytes())).find("longer than the declared"), std::string::npos);
  in.payload_length = 5;
  EXPECT_NE(decode_error(wrap(in.bytes())).find("shorter than the declared"), std::string::npos);
  in = Inner{};
  in.payload = {0x02, 0x84};  // continuation bit set on the last byte
  EXPECT_NE(decode_error(wrap(in.bytes())).find("inside a varint"), std::string::npos);
}

TEST(hdr_codec, RejectsCountsOutsideTheArray) {
  const std::size_t len = HdrHistogram().counts_length();
  Inner in;
  put_varint(in.payload, -static_cast<std::int64_t>(len));  // skip the whole array
  put_varint(in.payload, 1);                                // then one more count
  EXPECT_NE(decode_error(wrap(in.bytes())).find("past the end of the counts array"), std::string::npos);
  in.payload.clear();
  put_varint(in.payload, 3);
  put_varint(in.payload, -static_cast<std::int64_t>(len));  // run past the end
  EXPECT_NE(decode_error(wrap(in.bytes())).find("passes the end"), std::string::npos);
  in.payload.clear();
  put_varint(in.payload, std::numeric_limits<std::int64_t>::min());
  EXPECT_NE(decode_error(wrap(in.bytes())).find("zero-run"), std::string::npos);
  in.payload.clear();
  put_varint(in.payload, std::numeric_limits<std::int64_t>::max());
  put_varint(in.payload, std::numeric_limits<std::int64_t>::max());
  EXPECT_NE(decode_error(wrap(in.bytes())).find("overflows"), std::string::npos);
  // A run that exactly reaches the end is fine (nothing recorded after it).
  in.payload.clear();
  put_varint(in.payload, 1);
  put_varint(in.payload, -static_cast<std::int64_t>(len - 1));
  EXPECT_EQ(decode_compressed(wrap(in.bytes())).total_count(), 1);
}

TEST(hdr_codec, ZlibBombStopsAtTheDeclaredLength) {
  Inner in;
  in.payload = Bytes(std::size_t{16} << 20, 0x00);  // 16 MiB of zeros, compresses to ~16 KiB
  in.payload_length = 10;
  const Bytes bomb = wrap(in.bytes(), 1);
  EXPECT_LT(bomb.size(), 100'000u);
  EXPECT_NE(decode_error(bomb).find("longer than the declared"), std::string::npos);
  in.payload_length = -1;  // declared honestly: bigger than any valid payload for this layout
  EXPECT_NE(decode_error(wrap(in.bytes(), 1)).find("implausible payload length"), std::string::npos);
}

TEST(hdr_codec, RejectsCorruptZlib) {
  Bytes enc = encode_compressed(mixed());
  enc[8] = 0x00;  // not a zlib header
  EXPECT_NE(decode_error(enc).find("zlib"), std::string::npos);
  enc = encode_compressed(mixed());
  enc.back() ^= 0xff;  // adler32 mismatch
  EXPECT_NE(decode_error(enc).find("zlib"), std::string::npos);
}

TEST(hdr_codec, Base64Rfc4648Vectors) {
  const std::vector<std::pair<std::string, std::string>> vectors = {{"", ""},
                                                                    {"f", "Zg=="},
                                                                    {"fo", "Zm8="},
                                                                    {"foo", "Zm9v"},
                                                                    {"foob", "Zm9vYg=="},
                                                                    {"fooba", "Zm9vYmE="},
                                                                    {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    const Bytes raw(plain.begin(), plain.end());
    EXPECT_EQ(to_base64(raw), encoded);
    EXPECT_EQ(from_base64(encoded), raw);
  }
  Bytes all(256);
  for (int i = 0; i < 256; ++i) all[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(i);
  EXPECT_EQ(from_base64(to_base64(all)), all);
}

TEST(hdr_codec, Base64RejectsGarbage) {
  for (const std::string bad : {"Zg=", "Zm9v Yg==", "Zm9vYg=\n", "Zm9*", "=Zm9", "Zg==Zm9v", "Z===", "HISTF",
                                "Zm9vYg==\n", "\xff\xfe\xfd\xfc"}) {
    EXPECT_THROW((void)from_base64(bad), HdrCodecError) << bad;
  }
  try {
    (void)from_base64("Zm9vY*==");  // '*' is at index 5
    FAIL();
  } catch (const HdrCodecError& e) {
    EXPECT_NE(std::string(e.what()).find("position 5"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)decode_base64("SGVsbG8gd29ybGQ="), HdrCodecError);  // valid base64, not a histogram
}

}  // namespace
