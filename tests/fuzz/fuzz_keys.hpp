#pragma once
// A fixed signing key for the fuzzers and their seeds (tests/fuzz/make_seeds.cpp), so that seed
// entries carry signatures that verify and the fuzzer starts from the Valid path.

#include "cache/entry_signature.hpp"

#include <sodium/crypto_sign_ed25519.h>

namespace cujit::fuzz {

/// The key pair derived from 32 bytes of 0x5a.
inline detail::SigningKey fixed_signing_key() {
  detail::SigningKey key;
  key.secret.resize(crypto_sign_ed25519_SECRETKEYBYTES);
  key.public_key.resize(crypto_sign_ed25519_PUBLICKEYBYTES);
  const std::string seed(crypto_sign_ed25519_SEEDBYTES, '\x5a');
  crypto_sign_ed25519_seed_keypair(reinterpret_cast<unsigned char*>(key.public_key.data()),
                                   reinterpret_cast<unsigned char*>(key.secret.data()),
                                   reinterpret_cast<const unsigned char*>(seed.data()));
  return key;
}

}  // namespace cujit::fuzz
