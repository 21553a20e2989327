// Ed25519 signatures over cache entries: what verifies, what is refused, and the key files.
#include "cache/entry_signature.hpp"

#include "cache_test_util.hpp"

#include <cujit/error.hpp>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <functional>

namespace cujit::detail {
namespace {

using test::TempDir;

CacheRecord entry(const std::string& name, const std::string& binary) {
  CacheRecord r;
  r.content_key = to_hex(sha256(name));
  r.kind = "elementwise";
  r.program.target = Target{90};
  r.program.binary = binary;
  r.nvrtc_version = "13.0 (test)";
  return r;
}

const std::string kRequest = std::string(64, 'f');

TrustedKey trusted(const SigningKey& key) { return {key.public_key, key_id(key.public_key)}; }

TEST(EntrySignature, ASignedEntryVerifiesWithItsSignersKey) {
  const SigningKey builder = generate_signing_key();
  const CacheRecord r = entry("a", "cubin-a");
  std::string signer;
  EXPECT_EQ(
      verify_entry(r, kRequest, sign_entry(r, kRequest, builder), {trusted(builder)}, &signer),
      SignatureVerdict::Valid);
  EXPECT_EQ(signer, key_id(builder.public_key));
  EXPECT_EQ(signer.size(), 16u);
}

TEST(EntrySignature, EveryClaimOfTheEntryIsCovered) {
  const SigningKey builder = generate_signing_key();
  const CacheRecord original = entry("a", "cubin-a");
  const std::string signature = sign_entry(original, kRequest, builder);
  const std::vector<std::function<void(CacheRecord&)>> tamper = {
      [](CacheRecord& r) { r.program.binary += '\0'; },
      [](CacheRecord& r) { r.program.binary[0] ^= 1; },
      [](CacheRecord& r) { r.content_key = to_hex(sha256("b")); },
      [](CacheRecord& r) { r.kind = "reduction"; },
      [](CacheRecord& r) { r.program.target = Target{80}; },
      [](CacheRecord& r) {
        r.program.target = Target{90, BinaryFormat::Ptx};
      },
      [](CacheRecord& r) {
        r.program.target = Target{90, BinaryFormat::Cubin, true};
      },
      [](CacheRecord& r) { r.codegen_version += 1; },
      [](CacheRecord& r) { r.nvrtc_version = "12.9"; },
  };
  for (std::size_t k = 0; k < tamper.size(); ++k) {
    CacheRecord r = original;
    tamper[k](r);
    EXPECT_EQ(verify_entry(r, kRequest, signature, {trusted(builder)}, nullptr),
              SignatureVerdict::BadSignature)
        << "change " << k;
  }
}

TEST(EntrySignature, AValidSignatureOfAnotherEntryIsRefused) {
  const SigningKey builder = generate_signing_key();
  const CacheRecord a = entry("a", "cubin-a");
  CacheRecord b = entry("b", "cubin-b");
  EXPECT_EQ(
      verify_entry(b, kRequest, sign_entry(a, kRequest, builder), {trusted(builder)}, nullptr),
      SignatureVerdict::BadSignature);
  b.program.binary = a.program.binary;  // a's binary under b's key, with a's signature
  EXPECT_EQ(
      verify_entry(b, kRequest, sign_entry(a, kRequest, builder), {trusted(builder)}, nullptr),
      SignatureVerdict::BadSignature);
}

TEST(EntrySignature, ASignatureIsBoundToTheRequestItAnswers) {
  const SigningKey builder = generate_signing_key();
  const CacheRecord a = entry("a", "cubin-a");
  const std::string for_request = sign_entry(a, kRequest, builder);
  // The same entry served for another request (a remapping) does not verify, nor does a
  // signature of the entry alone (by content key) stand for a request mapping.
  EXPECT_EQ(verify_entry(a, std::string(64, 'e'), for_request, {trusted(builder)}, nullptr),
            SignatureVerdict::BadSignature);
  EXPECT_EQ(verify_entry(a, "", for_request, {trusted(builder)}, nullptr),
            SignatureVerdict::BadSignature);
  EXPECT_EQ(verify_entry(a, "", sign_entry(a, "", builder), {trusted(builder)}, nullptr),
            SignatureVerdict::Valid);
}

TEST(EntrySignature, UnsignedMalformedAndUntrustedAreTold) {
  const SigningKey builder = generate_signing_key();
  const SigningKey stranger = generate_signing_key();
  const CacheRecord r = entry("a", "cubin-a");
  const std::string good = sign_entry(r, kRequest, builder);
  EXPECT_EQ(verify_entry(r, kRequest, "", {trusted(builder)}, nullptr), SignatureVerdict::Unsigned);
  EXPECT_EQ(verify_entry(r, kRequest, good.substr(0, good.size() - 1), {trusted(builder)}, nullptr),
            SignatureVerdict::Malformed);
  EXPECT_EQ(verify_entry(r, kRequest, good + "x", {trusted(builder)}, nullptr),
            SignatureVerdict::Malformed);
  std::string signer;
  EXPECT_EQ(
      verify_entry(r, kRequest, sign_entry(r, kRequest, stranger), {trusted(builder)}, &signer),
      SignatureVerdict::UnknownSigner);
  EXPECT_EQ(signer, key_id(stranger.public_key));
  EXPECT_EQ(verify_entry(r, kRequest, good, {}, nullptr), SignatureVerdict::UnknownSigner);
  // A signature claiming the trusted key but made with another secret.
  std::string forged = sign_entry(r, kRequest, stranger);
  forged.replace(0, builder.public_key.size(), builder.public_key);
  EXPECT_EQ(verify_entry(r, kRequest, forged, {trusted(builder)}, nullptr),
            SignatureVerdict::BadSignature);
}

TEST(EntrySignature, KeyFilesRoundTripAndTheSecretStaysPrivate) {
  TempDir dir;
  const SigningKey written = generate_signing_key();
  write_key_pair(dir.file("builder"), written, false);
  struct stat st {};
  ASSERT_EQ(::stat(dir.file("builder.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const SigningKey read = read_signing_key(dir.file("builder.key"));
  EXPECT_EQ(read.secret, written.secret);
  EXPECT_EQ(read.public_key, written.public_key);
  const std::vector<TrustedKey> keys = read_trusted_keys(dir.file("builder.pub") + ":");
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_EQ(keys[0].public_key, written.public_key);
  EXPECT_EQ(keys[0].id, key_id(written.public_key));
  // Never replaced by accident; replaced on purpose.
  EXPECT_THROW(write_key_pair(dir.file("builder"), generate_signing_key(), false), CacheError);
  EXPECT_EQ(read_signing_key(dir.file("builder.key")).secret, written.secret);
  EXPECT_NO_THROW(write_key_pair(dir.file("builder"), generate_signing_key(), true));
  // A trusted key others can rewrite is refused: they would choose whose code is loaded.
  ASSERT_EQ(::chmod(dir.file("builder.pub").c_str(), 0664), 0);
  EXPECT_THROW(read_trusted_keys(dir.file("builder.pub")), CacheError);
  ASSERT_EQ(::chmod(dir.file("builder.pub").c_str(), 0644), 0);
  EXPECT_NO_THROW(read_trusted_keys(dir.file("builder.pub")));
  // A secret others can read is refused.
  ASSERT_EQ(::chmod(dir.file("builder.key").c_str(), 0640), 0);
  EXPECT_THROW(read_signing_key(dir.file("builder.key")), CacheError);
}

TEST(EntrySignature, MalformedKeyFilesAreRefusedNamingTheFile) {
  TempDir dir;
  auto file = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir.file(name)) << text;
    ::chmod(dir.file(name).c_str(), 0600);
    return dir.file(name);
  };
  for (const std::string& text :
       {std::string(""), std::string("cujit-ed25519-public-v1 00\n"),
        std::string("cujit-ed25519-public-v1 ") + std::string(64, 'z') + "\n",
        std::string("ssh-ed25519 AAAA\n")}) {
    const std::string path = file("bad.pub", text);
    try {
      read_trusted_keys(path);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const CacheError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(read_trusted_keys(dir.file("missing.pub")), CacheError);
  const std::string pub_as_secret =
      file("wrong.key", "cujit-ed25519-public-v1 " + std::string(64, '0') + "\n");
  EXPECT_THROW(read_signing_key(pub_as_secret), CacheError);
}

}  // namespace
}  // namespace cujit::detail
