#include "sentencepiece_tokenizer.hpp"

#include <sentencepiece_processor.h>

#include <vector>

namespace llmload::tokenizer {
namespace {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  explicit SentencePieceTokenizer(std::filesystem::path file) : file_(std::move(file)) {
    const auto status = processor_.Load(file_.string());
    if (!status.ok()) {
      throw TokenizerError(file_.string() + ": libsentencepiece cannot load it (" + status.ToString() +
                           "); check that it is the model's SentencePiece tokenizer.model, not another file");
    }
  }

  std::vector<TokenId> encode(std::string_view text, bool add_special) const override {
    std::vector<int> ids;
    const auto status = processor_.Encode(text, &ids);
    if (!status.ok()) throw TokenizerError(file_.string() + ": SentencePiece encode failed: " + status.ToString());
    std::vector<TokenId> out;
    out.reserve(ids.size() + 1);
    if (add_special && processor_.bos_id() >= 0) out.push_back(processor_.bos_id());
    out.insert(out.end(), ids.begin(), ids.end());
    return out;
  }

  std::string decode(std::span<const TokenId> ids, bool skip_special) const override {
    std::vector<int> kept;
    kept.reserve(ids.size());
    const int size = processor_.GetPieceSize();
    for (const TokenId id : ids) {
      if (id < 0 || id >= size || (skip_special && processor_.IsControl(id))) continue;
      kept.push_back(id);
    }
    std::string text;
    const auto status = processor_.Decode(kept, &text);
    if (!status.ok()) throw TokenizerError(file_.string() + ": SentencePiece decode failed: " + status.ToString());
    return text;
  }

  std::string_view kind() const override { return "sentencepiece"; }

  std::optional<TokenId> token_id(std::string_view token) const override {
    const int id = processor_.PieceToId(token);
    if (id < 0 || processor_.IdToPiece(id) != token) return std::nullopt;
    return id;
  }

  std::size_t vocab_size() const override { return static_cast<std::size_t>(processor_.GetPieceSize()); }
  const std::filesystem::path& source() const override { return file_; }

 private:
  std::filesystem::path file_;
  sentencepiece::SentencePieceProcessor processor_;
};

}  // namespace

std::unique_ptr<Tokenizer> load_sentencepiece_model(const std::filesystem::path& file) {
  return std::make_unique<SentencePieceTokenizer>(file);
}

bool sentencepiece_available() { return true; }

}  // namespace llmload::tokenizer
