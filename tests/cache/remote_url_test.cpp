// Issue 29, item 5: a malformed CUJIT_CACHE_REMOTE was quoted whole in a warning, password and
// all. Whatever is wrong with the URL, the password never prints.

#include "cache/kernel_cache.hpp"
#include "cache/remote_endpoint.hpp"
#include "cache_test_util.hpp"

#include <cujit/cache.hpp>

#include <gtest/gtest.h>

#include <string>

namespace cujit::detail {
namespace {

// Each malformed in its own way, each with the password "s3cret" somewhere.
const char* const kMalformed[] = {
    "rediss://fleet:s3cret@cache.internal:6380",  // TLS: not supported
    "redis://fleet:s3cret@cache.internal:99999",  // port
    "redis://fleet:s3cret@cache.internal/x",      // database
    "redis://fleet:s3cr%zzet@cache.internal",     // % escape
    "redis://s3cret@cache.internal:port",         // the default user's password
    "redis://fleet:s3@cret/x@cache.internal/db",  // '@' and '/' in the password
    "fleet:s3cret@cache.internal",                // no scheme
    "redis://cache.internal/x?password=s3cret",   // another client's syntax
};

TEST(RemoteUrl, AMalformedUrlsWarningNeverShowsThePassword) {
  for (const char* url : kMalformed) {
    ASSERT_FALSE(parse_remote_url(url, nullptr)) << url;
    test::WarningCapture warnings;
    CacheConfig config;
    config.database_path.clear();
    config.writable = false;
    config.remote_url = url;
    KernelCache cache(config);
    ASSERT_EQ(warnings.count(), 1u) << url << ": " << warnings.joined();
    EXPECT_TRUE(warnings.contains("is not usable")) << warnings.joined();
    EXPECT_FALSE(warnings.contains("s3")) << warnings.joined();
    EXPECT_TRUE(warnings.contains("***")) << warnings.joined();
  }
}

TEST(RemoteUrl, RedactedKeepsEverythingButThePassword) {
  EXPECT_EQ(redacted_remote_url("rediss://fleet:s3cret@h:6380/2"), "rediss://fleet:***@h:6380/2");
  EXPECT_EQ(redacted_remote_url("redis://s3cret@h:x"), "redis://***@h:x");
  EXPECT_EQ(redacted_remote_url("redis://u:a@b:c@h"), "redis://u:***@h");
  EXPECT_EQ(redacted_remote_url("redis://h:99999/x"), "redis://h:99999/x");
  EXPECT_EQ(redacted_remote_url("unix:///s.sock?db=x"), "unix:///s.sock?db=x");
  EXPECT_EQ(redacted_remote_url("redis://h?password=s3&db=1"), "redis://h?password=***&db=1");
}

}  // namespace
}  // namespace cujit::detail
