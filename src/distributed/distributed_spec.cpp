#include "distributed/distributed_spec.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdlib>

namespace lockstep {

MasterAddress parse_master_address(const std::string& text, std::string* error) {
  MasterAddress m;
  auto fail = [&](const std::string& why) {
    if (error) *error = why;
    return MasterAddress{};
  };
  size_t colon = text.rfind(':');
  if (colon == std::string::npos) return fail("expected HOST:PORT (node 0's address and a free port), got '" + text + "'");
  std::string host = text.substr(0, colon), port = text.substr(colon + 1);
  bool bracketed = host.size() >= 2 && host.front() == '[' && host.back() == ']';
  if (bracketed) host = host.substr(1, host.size() - 2);
  if (host.empty()) return fail("expected a host before the ':' in '" + text + "'");
  // A host name (letters, digits, '.', '-', '_'), an IPv4 address, or an
  // IPv6 address (bracketed, or alone: "::1:29500" is host ::1, port 29500).
  in6_addr v6{};
  bool ipv6 = host.find(':') != std::string::npos && inet_pton(AF_INET6, host.c_str(), &v6) == 1;
  bool name = !bracketed && host.size() <= 253 && host.front() != '-' &&
              host.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-_") ==
                  std::string::npos;
  if (!ipv6 && !name)
    return fail("'" + host + "' is not a host name, an IPv4 address or an IPv6 address (write IPv6 as [ADDR]:PORT)");
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
    return fail("expected a port 1..65535 after the ':' in '" + text + "'");
  int p = std::atoi(port.c_str());
  if (p < 1 || p > 65535) return fail("expected a port 1..65535 after the ':' in '" + text + "'");
  m.host = host;
  m.port = p;
  return m;
}

}  // namespace lockstep
