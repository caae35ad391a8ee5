#include "sim/io/sha256.h"

#include <catch2/catch.hpp>

#include <string>

using ess::sha256_hex;

// Expected digests from FIPS 180-2, Appendix B (SHA-256 examples), which NIST's published
// example values repeat.
TEST_CASE("sha256 matches the FIPS 180-2 example messages", "[sha256]") {
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sha256_hex(std::string(1'000'000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Expected digest from NIST's CAVP byte-oriented test vectors (SHA256ShortMsg.rsp, Len = 0).
TEST_CASE("sha256 of the empty message matches the NIST zero-length vector", "[sha256]") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST_CASE("sha256 pads correctly around the 55/56 and 64 byte block boundaries", "[sha256]") {
  // Expected values computed with `head -c N /dev/zero | tr '\0' a | sha256sum` (GNU coreutils 9.1,
  // Debian 12). 55 bytes is the longest message whose padding fits in one block; 56 needs a
  // second block; 63, 64 and 65 straddle a full block.
  CHECK(sha256_hex(std::string(55, 'a')) == "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  CHECK(sha256_hex(std::string(56, 'a')) == "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  CHECK(sha256_hex(std::string(63, 'a')) == "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34");
  CHECK(sha256_hex(std::string(64, 'a')) == "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
  CHECK(sha256_hex(std::string(65, 'a')) == "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0");
}

TEST_CASE("sha256 treats bytes above 0x7f as unsigned", "[sha256]") {
  std::string every_byte;
  for (int i = 0; i < 256; ++i) every_byte.push_back(static_cast<char>(i));
  // Computed with `python3 -c "import sys; sys.stdout.buffer.write(bytes(range(256)))" | sha256sum`
  // on Debian 12.
  CHECK(sha256_hex(every_byte) == "40aff2e9d2d8922e47afd4648e6967497158785fbd1da870e7110266bf944880");
}

TEST_CASE("sha256 digests differ for a one-bit change and are 64 lowercase hex digits", "[sha256]") {
  const std::string a = sha256_hex("scenario-a");
  const std::string b = sha256_hex("scenario-`");  // 'a' (0x61) with its low bit cleared (0x60)
  CHECK(a != b);
  REQUIRE(a.size() == 64);
  CHECK(a.find_first_not_of("0123456789abcdef") == std::string::npos);
}
