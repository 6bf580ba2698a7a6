#include "spec/distributed_spec.h"

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
  // A host name (letters, digits, '.', '-', '_'), a dotted-quad IPv4
  // address, or a bracketed IPv6 address. Unbracketed, "::1:29500" could
  // be host ::1 port 29500 or the address ::1:29500 itself; "127.1" and
  // "2130706433" are shorthands inet_aton reads as 127.0.0.1 that few
  // people would recognise: both are refused rather than guessed.
  if (!bracketed && host.find(':') != std::string::npos)
    return fail("'" + text + "' is ambiguous: write an IPv6 address in brackets, [ADDR]:PORT");
  in6_addr v6{};
  in_addr v4{};
  bool ipv6 = bracketed && inet_pton(AF_INET6, host.c_str(), &v6) == 1;
  bool name = !bracketed && host.size() <= 253 && host.front() != '-' &&
              host.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-_") ==
                  std::string::npos;
  bool numeric = host.find_first_not_of("0123456789.") == std::string::npos || host.rfind("0x", 0) == 0 ||
                 host.rfind("0X", 0) == 0;
  if (name && numeric && inet_pton(AF_INET, host.c_str(), &v4) != 1)
    return fail("'" + host + "' is not a dotted-quad IPv4 address such as 10.0.0.1");
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
