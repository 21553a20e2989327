#pragma once
// The fleet tier's test fixture: a real redis-server, a builder's key pair, and "hosts" (each
// its own local cache directory) configured to share the server.

#include "cache/entry_signature.hpp"
#include "cache/kernel_cache.hpp"
#include "cache/redis_client.hpp"
#include "cache/remote_endpoint.hpp"
#include "cache_test_util.hpp"
#include "support/redis_server.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

namespace cujit::test {

/// Skips the test with a reason when no redis-server can run here. CI installs it
/// (scripts/install_deps.sh), so there the tests run; CUJIT_TEST_REQUIRE_REDIS=1 makes its
/// absence a failure instead.
#define CUJIT_REQUIRE_REDIS(server)                                                        \
  do {                                                                                     \
    if (!(server).running()) {                                                             \
      if (std::getenv("CUJIT_TEST_REQUIRE_REDIS") != nullptr) FAIL() << "no redis-server"; \
      GTEST_SKIP() << "no redis-server here (install it: scripts/install_deps.sh)";        \
    }                                                                                      \
  } while (0)

/// A builder's key pair written to a temporary directory.
struct KeyPairFiles {
  TempDir dir;
  detail::SigningKey key = detail::generate_signing_key();
  KeyPairFiles() { detail::write_key_pair(dir.file("builder"), key, false); }
  std::string secret() const { return dir.file("builder.key"); }
  std::string pub() const { return dir.file("builder.pub"); }
};

/// A host's configuration: its own cache directory, the shared server, trusting `keys`.
inline CacheConfig host_config(const TempDir& dir, const std::string& url,
                               const KeyPairFiles& keys) {
  CacheConfig c;
  c.database_path = dir.file("kernels.db");
  c.preload_records = 0;
  c.remote_url = url;
  c.signing_key_path = keys.secret();
  c.trusted_keys_path = keys.pub();
  c.remote_backoff_ms = 30000;
  c.remote_lease_ms = 5000;
  return c;
}

/// A direct connection to the test server, for planting and inspecting entries.
inline detail::RedisConnection connect_to(const std::string& url) {
  return detail::RedisConnection(*detail::parse_remote_url(url, nullptr),
                                 std::chrono::milliseconds(1000), std::chrono::milliseconds(5000));
}

}  // namespace cujit::test
