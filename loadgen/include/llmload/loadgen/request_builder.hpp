#pragma once
// Builds the HTTP request of each scheduled request: endpoint path, headers and JSON body.

#include <cstdint>
#include <string>

#include "llmload/loadgen/scenario.hpp"
#include "llmload/loadgen/transport.hpp"

namespace llmload {

/// Contract: build(i) is deterministic for (config, i): the same seed gives the same bodies.
class RequestBuilder {
 public:
  /// `base_path` is the path prefix of the base URL (e.g. "" or "/proxy"); `host_header` is the
  /// value of the Host header.
  RequestBuilder(const ScenarioConfig& cfg, std::string base_path, std::string host_header);
  HttpRequest build(std::uint64_t index) const;
  std::string path() const;  // e.g. "/v1/completions"

 private:
  const ScenarioConfig& cfg_;
  std::string base_path_;
  std::string host_header_;
  std::uint64_t data_seed_;
};

}  // namespace llmload
