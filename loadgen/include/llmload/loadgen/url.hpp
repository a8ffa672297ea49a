#pragma once
#include <string>
#include <string_view>

namespace llmload {

/// A parsed --base-url.
struct BaseUrl {
  std::string scheme;  // "http" (https arrives with TLS support)
  std::string host;
  std::string port;
  std::string path;  // prefix without trailing '/' and without a trailing "/v1"
  std::string host_header() const;
  std::string to_string() const;  // scheme://host:port/path
};

/// Parses "http://host[:port][/prefix]". A trailing "/v1" is accepted and dropped (the endpoint
/// paths add it). Throws ConfigError naming the problem.
BaseUrl parse_base_url(std::string_view url);

}  // namespace llmload
