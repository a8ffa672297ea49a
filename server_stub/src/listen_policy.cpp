#include "llmload/server/listen_policy.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <fmt/format.h>

namespace llmload::server {

bool is_loopback_ip(std::string_view ip) {
  const std::string text(ip);  // inet_pton needs a terminated string
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, text.c_str(), &v6) != 1) return false;
  const unsigned char* b = v6.s6_addr;
  bool zero_prefix = true;  // bytes 0..9 are zero in both ::1 and ::ffff:a.b.c.d
  for (int i = 0; i < 10; ++i) zero_prefix = zero_prefix && b[i] == 0;
  if (!zero_prefix) return false;
  if (b[10] == 0 && b[11] == 0 && b[12] == 0 && b[13] == 0 && b[14] == 0 && b[15] == 1) return true;  // ::1
  return b[10] == 0xff && b[11] == 0xff && b[12] == 127;  // ::ffff:127.x.y.z
}

std::optional<std::string> remote_listen_refusal(std::string_view host, std::string_view ip, bool allow_remote) {
  if (allow_remote || is_loopback_ip(ip)) return std::nullopt;
  return fmt::format(
      "refusing to listen on {} (--host {}): it is not a loopback address, and llmload-server has no "
      "authentication, so anyone who can reach it could use it. Add --allow-remote to listen there anyway.",
      ip, host);
}

}  // namespace llmload::server
