#pragma once
// Where llmload-server may listen. The mock has no authentication, so by default it only listens
// on loopback; any other address needs an explicit --allow-remote. Pure functions (no sockets).

#include <optional>
#include <string>
#include <string_view>

namespace llmload::server {

/// True for a numeric address in 127.0.0.0/8, ::1 or ::ffff:127.0.0.0/104 (IPv4-mapped loopback).
/// Anything else, unparseable text and names included, is false.
bool is_loopback_ip(std::string_view ip);

/// Why listening on `ip` (the address `host` resolved to) is refused, naming the flag to add;
/// nullopt when it is allowed: a loopback address, or any address with `allow_remote`.
std::optional<std::string> remote_listen_refusal(std::string_view host, std::string_view ip, bool allow_remote);

}  // namespace llmload::server
