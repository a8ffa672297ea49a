// llmload-server: the bundled mock OpenAI-compatible server. See docs/server.md.
#include <csignal>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "llmload/common/duration.hpp"
#include "llmload/common/version.hpp"
#include "llmload/server/cli.hpp"
#include "llmload/server/fault.hpp"
#include "llmload/server/http_server.hpp"
#include "llmload/server/latency_model.hpp"
#include "llmload/server/output_sequence.hpp"
#include "llmload/server/server_tokenizer.hpp"
#include "llmload/common/process_limits.hpp"

int main(int argc, char** argv) {
  using namespace llmload::server;
  using llmload::OpenFileLimitChange;
  using llmload::raise_open_file_limit;
  const std::vector<std::string> args(argv + 1, argv + argc);
  CliOutcome cli = parse_command_line(args);
  std::fputs(cli.out.c_str(), stdout);
  std::fputs(cli.err.c_str(), stderr);
  if (!cli.config) return cli.exit_code;
  const ServerConfig& config = *cli.config;

  // stdout carries only the "listening on" line (scripts parse it); all logging goes to stderr.
  auto logger = spdlog::stderr_color_mt("llmload-server");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(config.log_level));
  // Each connection holds a descriptor: allow as many as the hard limit does.
  const OpenFileLimitChange nofile = raise_open_file_limit();
  if (!nofile.error.empty()) {
    spdlog::debug("open-file limit (RLIMIT_NOFILE) left at {}: {}", nofile.before, nofile.error);
  } else {
    spdlog::debug("open-file limit (RLIMIT_NOFILE): soft {} -> {} (hard {})", nofile.before, nofile.after, nofile.hard);
  }
  // Peers that vanish must surface as write errors, not kill the process.
  std::signal(SIGPIPE, SIG_IGN);

  try {
    HttpServer server(config, make_latency_model(config.latency));
    server.listen(/*handle_signals=*/true);
    std::printf("llmload-server listening on %s\n", server.url().c_str());
    std::fflush(stdout);
    if (config.latency.model == "engine") {
      spdlog::info("llmload-server {} serving {} (max_model_len {}) with the engine simulator: {}; {} io thread(s)",
                   llmload::kVersion, fmt::join(config.models, ", "), config.max_model_len,
                   server.engine_description(), config.io_threads);
    } else {
      spdlog::info("llmload-server {} serving {} (max_model_len {}) with latency model '{}': ttft {}, itl {}, "
                   "jitter {}, {} io thread(s)",
                   llmload::kVersion, fmt::join(config.models, ", "), config.max_model_len, config.latency.model,
                   llmload::format_duration(config.latency.ttft), llmload::format_duration(config.latency.itl),
                   config.latency.jitter, config.io_threads);
    }
    spdlog::info("tokens: {}", server_tokenizer_or_mock(config.tokenizer).description());
    spdlog::info("output: {}", describe_output_model(config.output));
    if (!config.faults.empty()) {
      for (const auto& rule : config.faults) {
        spdlog::info("fault injection: {} on {:.4g}% of generation requests", format_fault_spec(rule.fault),
                     rule.rate * 100);
      }
    }
    server.run();
    spdlog::info("stopped");
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
  return 0;
}
