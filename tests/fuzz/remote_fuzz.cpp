// Fuzzes what the fleet tier reads from Redis (cache/remote_entry.*, cache/entry_signature.*):
// anyone who can write the server chooses these bytes, so any value must decode to an intact
// entry or be refused, never crash, over-read or allocate what a length field claims; an entry
// that decodes has exactly one encoding; and its signature check never crashes and finds a
// valid signature only by the one trusted key.
//
// Input: the value, looked up under the request key "00..0aa" (64 hex digits).

#include "cache/entry_signature.hpp"
#include "cache/remote_entry.hpp"

#include "fuzz_check.hpp"
#include "fuzz_keys.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace {

const std::string kRequestKey = std::string(62, '0') + "aa";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cujit::detail;
  static const SigningKey key = cujit::fuzz::fixed_signing_key();
  static const std::vector<TrustedKey> trusted = {{key.public_key, key_id(key.public_key)}};
  const std::string value(reinterpret_cast<const char*>(data), size);
  RemoteEntry entry;
  const RemoteDecode decoded = decode_remote_entry(value, kRequestKey, &entry);
  if (decoded != RemoteDecode::Ok) return 0;
  CUJIT_FUZZ_CHECK(entry.record.checksum_ok(), "a decoded entry passes its checksum");
  CUJIT_FUZZ_CHECK(entry.request_key == kRequestKey, "a decoded entry answers the request");
  CUJIT_FUZZ_CHECK(encode_remote_entry(entry.request_key, entry.record, entry.signature) == value,
                   "an entry has one encoding");
  std::string signer;
  const SignatureVerdict verdict =
      verify_entry(entry.record, kRequestKey, entry.signature, trusted, &signer);
  if (verdict == SignatureVerdict::Valid) {
    CUJIT_FUZZ_CHECK(signer == trusted[0].id, "only the trusted key signs validly");
  }
  return 0;
}
