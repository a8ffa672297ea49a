#include "llmload/loadgen/request_builder.hpp"

#include <nlohmann/json.hpp>

#include "llmload/common/version.hpp"
#include "llmload/loadgen/prompt.hpp"

namespace llmload {

RequestBuilder::RequestBuilder(const ScenarioConfig& cfg, std::string base_path, std::string host_header)
    : cfg_(cfg), base_path_(std::move(base_path)), host_header_(std::move(host_header)), data_seed_(data_seed(cfg.seed)) {}

std::string RequestBuilder::path() const {
  return base_path_ + (cfg_.endpoint == ApiKind::kChat ? "/v1/chat/completions" : "/v1/completions");
}

HttpRequest RequestBuilder::build(std::uint64_t index) const {
  nlohmann::json body;
  body["model"] = cfg_.model;
  const std::string prompt = synthesize_prompt(cfg_.input_tokens, mix_seed(data_seed_ + index));
  if (cfg_.endpoint == ApiKind::kChat) {
    body["messages"] = nlohmann::json::array({{{"role", "user"}, {"content", prompt}}});
  } else {
    body["prompt"] = prompt;
  }
  body["max_tokens"] = cfg_.output_tokens;
  // vLLM/SGLang extensions that make the output length exact.
  body["ignore_eos"] = true;
  body["min_tokens"] = cfg_.output_tokens;
  body["temperature"] = 0.0;
  body["stream"] = cfg_.stream;
  if (cfg_.stream) body["stream_options"] = {{"include_usage", true}};

  HttpRequest req;
  req.method = "POST";
  req.target = path();
  req.headers.emplace_back("Host", host_header_);
  req.headers.emplace_back("Content-Type", "application/json");
  req.headers.emplace_back("Accept", cfg_.stream ? "text/event-stream" : "application/json");
  req.headers.emplace_back("User-Agent", std::string("llmload/") + kVersion);
  if (!cfg_.api_key.empty()) req.headers.emplace_back("Authorization", "Bearer " + cfg_.api_key);
  req.body = body.dump();
  return req;
}

}  // namespace llmload
