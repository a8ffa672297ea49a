// The "mmlu" dataset: MMLU's CSV files as published by hendrycks/test (no header; question, the
// four options, the answer letter), one file or a directory of them, graded by the choice grader.

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "list_workload.hpp"
#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/workload/csv.hpp"
#include "llmload/loadgen/workload/graded.hpp"
#include "llmload/loadgen/workload/sources.hpp"
#include "text_util.hpp"

namespace llmload {

namespace {

constexpr std::string_view kMmluForm =
    "each row must be question,A,B,C,D,answer with the answer a letter A-D (MMLU as published by hendrycks/test: "
    "no header row; a field with commas, quotes or line breaks is quoted, its quotes doubled, as in RFC 4180)";

struct MmluFile {
  std::string path;
  std::string subject;
};

std::vector<MmluFile> mmlu_files(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) {
    throw ConfigError(fmt::format("cannot read MMLU dataset \"{}\": no such file or directory; set --dataset-path to "
                                  "an MMLU CSV file or to a directory of them (data/test of the published archive)",
                                  path));
  }
  if (!fs::is_directory(st)) return {MmluFile{path, mmlu_subject(fs::path(path).filename().string())}};
  std::vector<MmluFile> files;
  for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (it->path().extension() == ".csv" && it->is_regular_file(type_ec)) {
      files.push_back(MmluFile{it->path().string(), mmlu_subject(it->path().filename().string())});
    }
  }
  if (ec) throw ConfigError(fmt::format("cannot list MMLU directory \"{}\": {}", path, ec.message()));
  if (files.empty()) {
    throw ConfigError(fmt::format("MMLU directory \"{}\" has no .csv files: set --dataset-path to the directory of "
                                  "*_test.csv files (data/test of the published archive) or to one file", path));
  }
  std::sort(files.begin(), files.end(), [](const MmluFile& a, const MmluFile& b) { return a.path < b.path; });
  return files;
}

// One record → the prompt and the answer letter; errors name file:line.
std::pair<std::string, std::string> parse_mmlu_record(const CsvRecord& rec, const MmluFile& file) {
  const std::string where = fmt::format("{}:{}", file.path, rec.line);
  if (rec.fields.size() != 6) {
    throw ConfigError(fmt::format("{}: {} field{}, expected 6; {}", where, rec.fields.size(),
                                  rec.fields.size() == 1 ? "" : "s", kMmluForm));
  }
  const std::string_view letter = workload_detail::trim(rec.fields[5]);
  if (letter.size() != 1 || letter[0] < 'A' || letter[0] > 'D') {
    std::string lower(letter);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    const std::string shown =
        nlohmann::json(rec.fields[5]).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    throw ConfigError(fmt::format("{}: the answer (6th field) is {}, not a letter A-D{}; {}", where, shown,
                                  lower == "answer" ? " (a header row? MMLU files have none: remove it)" : "",
                                  kMmluForm));
  }
  if (workload_detail::trim(rec.fields[0]).empty()) {
    throw ConfigError(fmt::format("{}: the question (1st field) is empty; {}", where, kMmluForm));
  }
  const std::array<std::string, 4> options = {rec.fields[1], rec.fields[2], rec.fields[3], rec.fields[4]};
  return {mmlu_prompt(file.subject, rec.fields[0], options), std::string(letter)};
}

struct MmluLoad {
  std::vector<WorkItem> items;
  std::int64_t rows = 0;
  std::map<std::string, std::int64_t> subjects;  // rows per subject in the files
  std::map<std::string, std::int64_t> kept;      // requests per subject
};

void load_mmlu_file(const MmluFile& file, std::int64_t output_tokens, std::optional<std::uint64_t> max_items,
                    const TokenModel& tokens, MmluLoad& load) {
  const std::string content = workload_detail::read_text_file(file.path, "MMLU dataset");
  const std::vector<CsvRecord> records = parse_csv(content, file.path);
  if (records.empty()) {
    throw ConfigError(fmt::format("MMLU file \"{}\" has no questions; {}", file.path, kMmluForm));
  }
  for (const CsvRecord& rec : records) {
    auto [prompt, letter] = parse_mmlu_record(rec, file);
    ++load.rows;
    ++load.subjects[file.subject];
    // Rows past max_items are still validated: a bad file fails at start-up, whatever the limit.
    if (max_items && load.items.size() >= *max_items) continue;
    WorkItem w;
    w.prompt = std::move(prompt);
    w.input_tokens = tokens.overhead + estimate_text_tokens(w.prompt);
    w.output_tokens = output_tokens;
    w.reference = std::move(letter);
    w.grader = "choice";
    w.subset = file.subject;
    ++load.kept[file.subject];
    load.items.push_back(std::move(w));
  }
}

nlohmann::json describe_mmlu(const std::string& path, std::size_t files, const MmluLoad& load,
                              std::optional<std::uint64_t> max_items, std::int64_t output_tokens,
                              const TokenModel& tokens) {
  std::int64_t in_total = 0;
  for (const auto& w : load.items) in_total += w.input_tokens;
  nlohmann::json d;
  d["dataset"] = "mmlu";
  d["path"] = path;
  d["files"] = files;
  d["rows"] = load.rows;
  d["subjects"] = load.subjects.size();
  d["requests"] = load.items.size();
  d["max_items"] = max_items ? nlohmann::json(*max_items) : nlohmann::json(nullptr);
  d["order"] = "files sorted by name, rows in file order";
  d["subsets"] = load.kept;
  d["subset"] = "the subject, from the file name (high_school_physics_test.csv -> high_school_physics)";
  d["prompt_template"] =
      "The following is a multiple choice question about {subject}.\n\n{question}\nA. {A}\nB. {B}\nC. {C}\nD. "
      "{D}\nAnswer:";
  d["grader"] = "choice";
  d["input_tokens_total"] = in_total;
  d["output_tokens_total"] = output_tokens * static_cast<std::int64_t>(load.items.size());
  d["lengths_estimated"] = true;
  d["token_estimate"] = fmt::format("prompt: ceil(UTF-8 bytes / 4) plus the token model's overhead ({}); output: "
                                    "the default output length {}", tokens.overhead, output_tokens);
  return d;
}

}  // namespace

std::unique_ptr<Workload> make_mmlu_workload(const WorkloadConfig& cfg, std::int64_t output_tokens,
                                             std::optional<std::uint64_t> max_items, const TokenModel& tokens) {
  const std::string& path = cfg.dataset_path;
  if (path.empty()) {
    throw ConfigError("dataset mmlu needs data: set --dataset-path (dataset_path) to an MMLU CSV file or a directory "
                      "of them");
  }
  if (output_tokens < 1) {
    throw ConfigError(fmt::format("dataset mmlu asks for the default output length, {}: set --output-tokens to at "
                                  "least 1", output_tokens));
  }
  const std::vector<MmluFile> files = mmlu_files(path);
  MmluLoad load;
  for (const MmluFile& file : files) load_mmlu_file(file, output_tokens, max_items, tokens, load);
  if (load.items.empty()) {
    throw ConfigError(fmt::format("MMLU dataset \"{}\": zero requests kept (the request limit is 0)", path));
  }
  nlohmann::json d = describe_mmlu(path, files.size(), load, max_items, output_tokens, tokens);
  return std::make_unique<workload_detail::ListWorkload>(std::move(load.items), std::move(d));
}

}  // namespace llmload
