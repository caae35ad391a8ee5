// SHA-256 (FIPS 180-4, section 6.2) of a byte string, for fingerprinting scenarios and outputs.
//
// Written from the standard, with no dependency on OpenSSL; not constant-time, so it is meant for
// checksums, not for secrets.
#pragma once

#include <string>
#include <string_view>

namespace ess {

// The 64-character lowercase hexadecimal digest of `data`, the same text `sha256sum` prints.
[[nodiscard]] std::string sha256_hex(std::string_view data);

}  // namespace ess
