// GCC 12 at -O2 reports a false -Wnull-dereference inside CLI11's inlined string helpers
// (CLI::detail::split -> std::string), located in libstdc++'s headers; silenced for this file.
#pragma GCC diagnostic ignored "-Wnull-dereference"

#include "llmload/server/cli.hpp"

#include <limits>
#include <sstream>

#include <CLI/CLI.hpp>

#include "llmload/common/duration.hpp"
#include "llmload/common/version.hpp"
#include "llmload/server/latency_model.hpp"

namespace llmload::server {
namespace {

constexpr const char* kDescription =
    "llmload-server: a mock OpenAI-compatible LLM inference server (vLLM-shaped responses) for testing "
    "load generators. Serves GET /health, GET /v1/models, POST /v1/completions, POST /v1/chat/completions "
    "(streaming and not) and POST /tokenize.";

constexpr const char* kFooter =
    "Tokens: the mock counts one prompt token per whitespace-separated word of the prompt (for chat: the sum "
    "over all messages of the words of their text content, no template overhead). It always generates exactly "
    "max_tokens tokens (it has no EOS; ignore_eos changes nothing), each a word with a leading space, and "
    "finishes with finish_reason \"length\". Timing (fixed model): token k is due TTFT + k*ITL after the "
    "request body has been read.\n";

CLI::Validator duration_validator() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        try {
          (void)parse_duration(value, "");
          return {};
        } catch (const DurationParseError& e) {
          return e.what();
        }
      },
      "DURATION");
}

/// A duration with a unit that is > 0 (a zero timeout would close every connection at once).
CLI::Validator positive_duration_validator() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        try {
          if (parse_duration(value, "").count() <= 0) return "must be positive, e.g. 30s";
          return {};
        } catch (const DurationParseError& e) {
          return e.what();
        }
      },
      "DURATION");
}

}  // namespace

CliOutcome parse_command_line(const std::vector<std::string>& args) {
  ServerConfig cfg;
  CLI::App app{kDescription, "llmload-server"};
  app.footer(kFooter);
  app.set_version_flag("--version", std::string("llmload-server ") + kVersion);

  int port = cfg.port;
  std::string ttft = "50ms";
  std::string itl = "10ms";
  std::vector<std::string> models;
  std::string header_timeout = "30s";
  std::string body_timeout = "60s";
  std::string keepalive_timeout = "120s";

  app.add_option("--host", cfg.host,
                 "Address to listen on. Other than loopback (127.0.0.0/8, ::1, localhost) it needs --allow-remote")
      ->capture_default_str();
  app.add_flag("--allow-remote", cfg.allow_remote,
               "Allow listening on a non-loopback address (the server has no authentication)");
  app.add_option("--port", port, "TCP port to listen on; 0 picks a free one (printed on the listening line)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  app.add_option("--model", models, "Served model id; repeat the flag to serve several [default: llmload-mock]")
      ->allow_extra_args(false);
  app.add_option("--max-model-len", cfg.max_model_len, "Context length: prompt tokens + max_tokens must fit")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  app.add_option("--latency-model", cfg.latency.model, "How token times are computed")
      ->capture_default_str()
      ->check(CLI::IsMember(latency_model_names()));
  app.add_option("--ttft", ttft, "Time to first token, from the end of the request body (e.g. 50ms)")
      ->capture_default_str()
      ->check(duration_validator());
  app.add_option("--itl", itl, "Inter-token latency between consecutive tokens (e.g. 10ms)")
      ->capture_default_str()
      ->check(duration_validator());
  app.add_option("--jitter", cfg.latency.jitter,
                 "Scale each TTFT and ITL by a random factor uniform in [1-J, 1+J] (0 <= J <= 1)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--seed", cfg.latency.seed, "Seed of the jitter and of the response ids")->capture_default_str();
  app.add_option("--threads", cfg.io_threads, "Number of io threads")->capture_default_str()->check(CLI::Range(1, 256));
  app.add_option("--header-timeout", header_timeout,
                 "The request head must arrive within this from its first byte (from the accept on a new "
                 "connection), however slowly bytes trickle in; else 408 and close")
      ->capture_default_str()
      ->check(positive_duration_validator());
  app.add_option("--body-timeout", body_timeout,
                 "The request body must arrive within this from the end of the head; else 408 and close")
      ->capture_default_str()
      ->check(positive_duration_validator());
  app.add_option("--keepalive-timeout", keepalive_timeout,
                 "Close a keep-alive connection when no next request starts within this")
      ->capture_default_str()
      ->check(positive_duration_validator());
  app.add_option("--max-connections", cfg.max_connections,
                 "Open connections beyond this get 503 and are closed at once (lowered to fit ulimit -n)")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{10000000}));
  app.add_option("--log-level", cfg.log_level, "Logging to stderr (debug: one line per request)")
      ->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));

  std::vector<const char*> argv;
  argv.push_back("llmload-server");
  for (const auto& a : args) argv.push_back(a.c_str());

  CliOutcome outcome;
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    std::ostringstream out;
    std::ostringstream err;
    outcome.exit_code = app.exit(e, out, err);
    outcome.out = out.str();
    outcome.err = err.str();
    return outcome;
  }
  cfg.port = static_cast<std::uint16_t>(port);
  if (!models.empty()) cfg.models = models;
  for (const auto& m : cfg.models) {
    if (m.empty()) {
      outcome.exit_code = 2;
      outcome.err = "--model: a model id must not be empty\nRun with --help for more information.\n";
      return outcome;
    }
  }
  // The validators above already accepted these.
  cfg.latency.ttft = parse_duration(ttft, "");
  cfg.latency.itl = parse_duration(itl, "");
  cfg.header_timeout = parse_duration(header_timeout, "");
  cfg.body_timeout = parse_duration(body_timeout, "");
  cfg.keepalive_timeout = parse_duration(keepalive_timeout, "");
  outcome.config = std::move(cfg);
  return outcome;
}

}  // namespace llmload::server
