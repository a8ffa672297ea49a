// tokenizer.json "decoder": token strings -> text. Supported: ByteLevel, ByteFallback, Fuse,
// Replace (string or regex), Strip, Metaspace, Sequence; null joins the tokens as they are.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hf_json.hpp"

namespace llmload::tokenizer {

struct DecodePiece {
  std::string text;
  bool added = false;  // an added token: ByteLevel passes it through verbatim
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void apply(std::vector<DecodePiece>& pieces) const = 0;
  // At most how many times longer apply() makes the text (a bound): Replace steps multiply in a
  // Sequence, so make_decoder refuses more than kMaxTextGrowth (normalizer.hpp).
  virtual std::size_t growth() const { return 1; }
};

std::unique_ptr<Decoder> make_decoder(const hf::Json& config, const std::string& origin);

// Runs the decoder and joins the pieces; without a decoder (null), joins them with spaces.
std::string run_decoder(const Decoder* decoder, std::vector<DecodePiece> pieces);

}  // namespace llmload::tokenizer
