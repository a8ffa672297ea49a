// load_tokenizer: picks the file in a model directory and the loader for it.
#include <fstream>
#include <sstream>

#include "hf_json.hpp"
#include "hf_tokenizer.hpp"
#include "llmload/tokenizer/tokenizer.hpp"
#include "sentencepiece_tokenizer.hpp"
#include "unicode.hpp"

namespace llmload::tokenizer {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw TokenizerError(file.string() + ": cannot be opened for reading; check the path and its permissions");
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) throw TokenizerError(file.string() + ": reading it failed");
  return std::move(s).str();
}

fs::path pick_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    throw TokenizerError(path.string() + ": no such file or directory; give a model directory holding "
                                         "tokenizer.json (or tokenizer.model), or the file itself");
  }
  if (!fs::is_directory(path, ec)) return path;
  for (const char* name : {"tokenizer.json", "tokenizer.model"}) {
    if (fs::is_regular_file(path / name, ec)) return path / name;
  }
  throw TokenizerError(path.string() + ": the directory has neither tokenizer.json nor tokenizer.model; download "
                                       "the model's tokenizer files into it (huggingface-cli download MODEL "
                                       "tokenizer.json tokenizer_config.json --local-dir DIR)");
}

}  // namespace

std::unique_ptr<Tokenizer> load_hf_tokenizer_json(std::string_view json_text, const fs::path& origin) {
  hf::Json root;
  try {
    root = hf::Json::parse(json_text);
  } catch (const hf::Json::exception& e) {
    throw TokenizerError(origin.string() + ": not valid JSON (" + e.what() + "); download the tokenizer.json again");
  }
  return make_hf_tokenizer(root, origin);
}

std::unique_ptr<Tokenizer> load_tokenizer(const fs::path& path) {
  const fs::path file = pick_file(path);
  if (file.extension() == ".model") return load_sentencepiece_model(file);
  if (file.extension() != ".json") {
    throw TokenizerError(file.string() + ": unknown tokenizer file type; give a tokenizer.json (Hugging Face) or "
                                         "a tokenizer.model (SentencePiece), or the model directory");
  }
  return load_hf_tokenizer_json(read_file(file), file);
}

const char* unicode_version() { return unicode::version(); }

}  // namespace llmload::tokenizer
