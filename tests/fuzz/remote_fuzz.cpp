// Fuzzes what the fleet tier reads from Redis (cache/remote_entry.*, cache/entry_signature.*):
// anyone who can write the server chooses these bytes, so any value must decode to an intact
// entry or be refused, never crash, over-read or allocate what a length field claims; an entry
// that decodes has exactly one encoding; its signature check never crashes and finds a valid
// signature only by the one trusted key; and a validly signed entry with any one field edited
// (checksum resealed) no longer verifies.
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
  if (verdict != SignatureVerdict::Valid) return 0;
  CUJIT_FUZZ_CHECK(signer == trusted[0].id, "only the trusted key signs validly");
  // The signature covers every field a reader uses: a validly signed entry with any one field
  // edited (and its checksum resealed, as anyone can) no longer verifies.
  for (int field = 0; field < 6; ++field) {
    CacheRecord edited = entry.record;
    switch (field) {
      case 0:
        edited.program.lowered_names.emplace_back("k2", "k");
        break;
      case 1:
        edited.program.metadata += ' ';
        break;
      case 2:
        edited.program.log += 'x';
        break;
      case 3:
        edited.options += ' ';
        break;
      case 4:
        edited.source_zstd += '\0';
        break;
      default:
        edited.program.binary += '\0';
        break;
    }
    edited.checksum = record_checksum(edited);
    CUJIT_FUZZ_CHECK(verify_entry(edited, kRequestKey, entry.signature, trusted, nullptr) ==
                         SignatureVerdict::BadSignature,
                     "an edited field of a signed entry still verifies");
  }
  return 0;
}
