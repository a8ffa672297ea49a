#pragma once
#include <string>
#include <string_view>

namespace llmload {

/// A parsed --base-url.
struct BaseUrl {
  std::string scheme;  // "http" or "https" (lower case)
  std::string host;
  std::string port;  // the default port (80 or 443) when the URL has none
  std::string path;  // prefix without trailing '/' and without a trailing "/v1"
  std::string host_header() const;
  std::string to_string() const;  // scheme://host:port/path
};

/// Parses "http[s]://host[:port][/prefix]". A trailing "/v1" is accepted and dropped (the endpoint
/// paths add it). Throws ConfigError naming the problem.
BaseUrl parse_base_url(std::string_view url);

}  // namespace llmload
