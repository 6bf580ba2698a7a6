// The --master address of a run on several machines.
#include "spec/distributed_spec.h"

#include <gtest/gtest.h>

namespace lockstep {
namespace {

MasterAddress parse(const std::string& text, std::string* error) {
  error->clear();
  return parse_master_address(text, error);
}

TEST(MasterAddress, ParsesHostAndPort) {
  std::string error;
  MasterAddress m = parse("node0.example:29500", &error);
  EXPECT_EQ(error, "");
  EXPECT_EQ(m.host, "node0.example");
  EXPECT_EQ(m.port, 29500);
  EXPECT_EQ(m.describe(), "node0.example:29500");
  m = parse("[::1]:1", &error);
  EXPECT_EQ(m.host, "::1");
  EXPECT_EQ(m.port, 1);
  EXPECT_EQ(m.describe(), "[::1]:1");
  EXPECT_EQ(parse(m.describe(), &error).host, "::1");
  EXPECT_EQ(parse("10.0.0.1:65535", &error).port, 65535);
}

TEST(MasterAddress, RefusesWhatIsNotHostColonPort) {
  std::string error;
  EXPECT_FALSE(parse("node0", &error).set());
  EXPECT_EQ(error, "expected HOST:PORT (node 0's address and a free port), got 'node0'");
  EXPECT_FALSE(parse(":29500", &error).set());
  EXPECT_EQ(error, "expected a host before the ':' in ':29500'");
  for (const char* bad : {"h:0", "h:65536", "h:", "h:29x", "h:-1", "h:123456"}) {
    EXPECT_FALSE(parse(bad, &error).set()) << bad;
    EXPECT_EQ(error, std::string("expected a port 1..65535 after the ':' in '") + bad + "'");
  }
  for (const char* bad : {"a b:1", "h\xc3\xa9llo:1", ";id:1", "@:1", "%:1", "[node0]:1", "-x:1"}) {
    EXPECT_FALSE(parse(bad, &error).set()) << bad;
    std::string host = std::string(bad).substr(0, std::string(bad).rfind(':'));
    if (host.front() == '[') host = host.substr(1, host.size() - 2);
    EXPECT_EQ(error, "'" + host + "' is not a host name, an IPv4 address or an IPv6 address (write IPv6 as [ADDR]:PORT)")
        << bad;
  }
  // Unbracketed colons: "::1:29500" is host ::1 port 29500, or the address
  // ::1:29500 itself; refused, not guessed.
  for (const char* bad : {"::1:29500", "fe80::1:2:29500", "127.0.0.1:41131:41132", "a:b:1"}) {
    EXPECT_FALSE(parse(bad, &error).set()) << bad;
    EXPECT_EQ(error, "'" + std::string(bad) + "' is ambiguous: write an IPv6 address in brackets, [ADDR]:PORT");
  }
  // inet_aton's shorthands (127.1 is 127.0.0.1, 1.2.3 is 1.2.0.3).
  for (const char* bad : {"127.1:1", "2130706433:1", "0x7f.1:1", "1.2.3:1", "010.0.0.1:1", "1.2.3.4.5:1"}) {
    EXPECT_FALSE(parse(bad, &error).set()) << bad;
    std::string host = std::string(bad).substr(0, std::string(bad).rfind(':'));
    EXPECT_EQ(error, "'" + host + "' is not a dotted-quad IPv4 address such as 10.0.0.1") << bad;
  }
  EXPECT_EQ(parse("[fe80::1:2]:29500", &error).port, 29500);
  EXPECT_EQ(parse("[::ffff:127.0.0.1]:7", &error).host, "::ffff:127.0.0.1");
  EXPECT_EQ(parse("node_0.rack-1:2", &error).host, "node_0.rack-1");
}

}  // namespace
}  // namespace lockstep
