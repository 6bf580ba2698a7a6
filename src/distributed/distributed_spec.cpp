#include "distributed/distributed_spec.h"

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
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) return fail("expected a host before the ':' in '" + text + "'");
  if (host.find_first_of(" \t\r\n/[]") != std::string::npos)
    return fail("'" + host + "' is not a host name or address");
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
    return fail("expected a port 1..65535 after the ':' in '" + text + "'");
  int p = std::atoi(port.c_str());
  if (p < 1 || p > 65535) return fail("expected a port 1..65535 after the ':' in '" + text + "'");
  m.host = host;
  m.port = p;
  return m;
}

}  // namespace lockstep
