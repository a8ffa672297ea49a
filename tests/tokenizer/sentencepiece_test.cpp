// SentencePiece tokenizer.model files through libsentencepiece: a tiny BPE model trained here
// (no model files are downloaded), loaded from its directory the way a model's would be.
#include <sentencepiece_trainer.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "llmload/tokenizer/tokenizer.hpp"

namespace llmload::tokenizer {
namespace {

namespace fs = std::filesystem;

class tokenizer_sentencepiece : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("llmload_spm_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    {
      std::ofstream corpus(dir_ / "corpus.txt");
      const char* words[] = {"hello", "world", "token", "server", "latency", "the", "of", "and", "model", "request"};
      for (int i = 0; i < 2000; ++i) corpus << words[i % 10] << ' ' << words[(i * 7) % 10] << ' ' << words[(i * 3) % 10] << "\n";
    }
    const std::string args = "--input=" + (dir_ / "corpus.txt").string() + " --model_prefix=" + (dir_ / "tokenizer").string() +
                             " --vocab_size=320 --model_type=bpe --byte_fallback=true --minloglevel=2";
    const auto status = sentencepiece::SentencePieceTrainer::Train(args);
    ASSERT_TRUE(status.ok()) << status.ToString();
    fs::remove(dir_ / "corpus.txt");
    fs::remove(dir_ / "tokenizer.vocab");
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static fs::path dir_;
};
fs::path tokenizer_sentencepiece::dir_;

TEST_F(tokenizer_sentencepiece, LoadsAModelDirectoryAndRoundTrips) {
  ASSERT_TRUE(sentencepiece_available());
  const auto tok = load_tokenizer(dir_);
  EXPECT_EQ(tok->kind(), "sentencepiece");
  EXPECT_EQ(tok->source(), dir_ / "tokenizer.model");
  EXPECT_EQ(tok->vocab_size(), 320U);
}

TEST_F(tokenizer_sentencepiece, EncodeDecodeSpecialTokensAndByteFallback) {
  const auto tok = load_tokenizer(dir_ / "tokenizer.model");
  const std::string text = "hello world, the model of the server";
  const auto ids = tok->encode(text);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(tok->decode(ids), text);
  EXPECT_EQ(tok->count(text), ids.size());
  const auto bos = tok->token_id("<s>");
  ASSERT_TRUE(bos.has_value());
  const auto with_bos = tok->encode(text, true);
  ASSERT_EQ(with_bos.size(), ids.size() + 1);
  EXPECT_EQ(with_bos.front(), *bos);
  EXPECT_EQ(tok->decode(with_bos, true), text);
  EXPECT_FALSE(tok->token_id("no-such-piece").has_value());
  EXPECT_EQ(tok->decode(tok->encode("中文 ok")), "中文 ok");  // unseen characters: byte fallback
}

}  // namespace
}  // namespace llmload::tokenizer
