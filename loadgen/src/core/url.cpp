#include "llmload/loadgen/url.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "llmload/loadgen/config_error.hpp"

namespace llmload {

std::string BaseUrl::host_header() const {
  const bool default_port = (scheme == "http" && port == "80") || (scheme == "https" && port == "443");
  const std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return default_port ? h : h + ":" + port;
}

std::string BaseUrl::to_string() const { return scheme + "://" + host_header() + path; }

namespace {

// The URL as an error message may show it: credentials (user:password@) and a query or fragment
// (which may carry a key) replaced by placeholders.
std::string shown_url(std::string_view url) {
  const auto sep = url.find("://");
  const std::size_t from = sep == std::string_view::npos ? 0 : sep + 3;
  std::string out(url.substr(0, from));
  std::string_view rest = url.substr(from);
  const auto end_of_authority = rest.find_first_of("/?#");
  const auto at = rest.substr(0, end_of_authority).rfind('@');
  if (at != std::string_view::npos) {
    out += "<credentials>@";
    rest.remove_prefix(at + 1);
  }
  const auto query = rest.find_first_of("?#");
  out += rest.substr(0, query);
  if (query != std::string_view::npos) out += rest[query] == '?' ? "?<query>" : "#<fragment>";
  return out;
}

}  // namespace

BaseUrl parse_base_url(std::string_view url) {
  auto bad = [&](std::string_view why) {
    return ConfigError(
        fmt::format("bad --base-url '{}': {} (expected e.g. http://127.0.0.1:8000)", shown_url(url), why));
  };
  BaseUrl u;
  auto sep = url.find("://");
  if (sep == std::string_view::npos) throw bad("missing scheme http:// or https://");
  u.scheme = std::string(url.substr(0, sep));
  std::transform(u.scheme.begin(), u.scheme.end(), u.scheme.begin(), [](unsigned char c) { return std::tolower(c); });
  if (u.scheme != "http" && u.scheme != "https") throw bad("unsupported scheme '" + u.scheme + "' (http or https)");
  std::string_view rest = url.substr(sep + 3);
  const auto slash = rest.find_first_of("/?#");  // a query may follow the authority directly
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash);
  if (authority.empty()) throw bad("missing host");
  if (authority.find('@') != std::string_view::npos) throw bad("credentials in the URL are not supported; use --api-key");
  if (authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos) throw bad("unterminated IPv6 address");
    u.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') throw bad("junk after IPv6 address");
      u.port = std::string(after.substr(1));
    }
  } else {
    auto colon = authority.rfind(':');
    u.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) u.port = std::string(authority.substr(colon + 1));
  }
  if (u.host.empty()) throw bad("missing host");
  if (u.port.empty()) u.port = u.scheme == "https" ? "443" : "80";
  if (!std::all_of(u.port.begin(), u.port.end(), [](unsigned char c) { return std::isdigit(c); }) ||
      u.port.size() > 5 || std::stoi(u.port) < 1 || std::stoi(u.port) > 65535) {
    throw bad("port must be a number from 1 to 65535");
  }
  if (path.find_first_of("?#") != std::string_view::npos) throw bad("query strings and fragments are not allowed");
  std::string p(path);
  while (!p.empty() && p.back() == '/') p.pop_back();
  if (p.size() >= 3 && p.substr(p.size() - 3) == "/v1") p.resize(p.size() - 3);
  while (!p.empty() && p.back() == '/') p.pop_back();
  u.path = p;
  return u;
}

}  // namespace llmload
