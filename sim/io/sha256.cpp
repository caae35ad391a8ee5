#include "sim/io/sha256.h"

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace ess {

namespace {

// FIPS 180-4 section 4.2.2: the first 32 bits of the fractional parts of the cube roots of the
// first 64 primes.
constexpr std::array<std::uint32_t, 64> k_round_constants = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

// FIPS 180-4 section 5.3.3: the first 32 bits of the fractional parts of the square roots of the
// first 8 primes.
constexpr std::array<std::uint32_t, 8> k_initial_hash = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

constexpr std::size_t k_block_bytes = 64;
// Padding (section 5.1.1) ends with the message length in bits as a 64-bit big-endian integer.
constexpr std::size_t k_length_bytes = 8;

using Block = std::array<unsigned char, k_block_bytes>;
using State = std::array<std::uint32_t, 8>;

// Section 4.1.2.
constexpr std::uint32_t ch(std::uint32_t x, std::uint32_t y, std::uint32_t z) { return (x & y) ^ (~x & z); }
constexpr std::uint32_t maj(std::uint32_t x, std::uint32_t y, std::uint32_t z) {
  return (x & y) ^ (x & z) ^ (y & z);
}
constexpr std::uint32_t big_sigma0(std::uint32_t x) { return std::rotr(x, 2) ^ std::rotr(x, 13) ^ std::rotr(x, 22); }
constexpr std::uint32_t big_sigma1(std::uint32_t x) { return std::rotr(x, 6) ^ std::rotr(x, 11) ^ std::rotr(x, 25); }
constexpr std::uint32_t small_sigma0(std::uint32_t x) { return std::rotr(x, 7) ^ std::rotr(x, 18) ^ (x >> 3); }
constexpr std::uint32_t small_sigma1(std::uint32_t x) { return std::rotr(x, 17) ^ std::rotr(x, 19) ^ (x >> 10); }

// Section 6.2.2: one 512-bit block into the running hash.
void compress(State& hash, const unsigned char* block) {
  std::array<std::uint32_t, 64> w{};
  for (std::size_t t = 0; t < 16; ++t) {
    // Words are big-endian (section 3.1).
    w[t] = (std::uint32_t{block[4 * t]} << 24) | (std::uint32_t{block[4 * t + 1]} << 16) |
           (std::uint32_t{block[4 * t + 2]} << 8) | std::uint32_t{block[4 * t + 3]};
  }
  for (std::size_t t = 16; t < 64; ++t) {
    w[t] = small_sigma1(w[t - 2]) + w[t - 7] + small_sigma0(w[t - 15]) + w[t - 16];
  }

  std::uint32_t a = hash[0], b = hash[1], c = hash[2], d = hash[3];
  std::uint32_t e = hash[4], f = hash[5], g = hash[6], h = hash[7];
  for (std::size_t t = 0; t < 64; ++t) {
    const std::uint32_t t1 = h + big_sigma1(e) + ch(e, f, g) + k_round_constants[t] + w[t];
    const std::uint32_t t2 = big_sigma0(a) + maj(a, b, c);
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  hash[0] += a;
  hash[1] += b;
  hash[2] += c;
  hash[3] += d;
  hash[4] += e;
  hash[5] += f;
  hash[6] += g;
  hash[7] += h;
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  State hash = k_initial_hash;
  const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());

  const std::size_t whole_blocks = data.size() / k_block_bytes;
  for (std::size_t i = 0; i < whole_blocks; ++i) compress(hash, bytes + i * k_block_bytes);

  // Section 5.1.1: the rest of the message, a 1 bit, zeros, then the length in bits; one extra
  // block when the rest leaves no room for the 0x80 byte and the 8 length bytes.
  const std::size_t rest = data.size() - whole_blocks * k_block_bytes;
  std::array<unsigned char, 2 * k_block_bytes> tail{};
  for (std::size_t i = 0; i < rest; ++i) tail[i] = bytes[whole_blocks * k_block_bytes + i];
  tail[rest] = 0x80;
  const std::size_t tail_bytes = rest + 1 + k_length_bytes <= k_block_bytes ? k_block_bytes : 2 * k_block_bytes;
  // The standard allows messages under 2^64 bits (2^61 bytes), more than any address space holds.
  const std::uint64_t bit_length = static_cast<std::uint64_t>(data.size()) * 8U;
  for (std::size_t i = 0; i < k_length_bytes; ++i) {
    tail[tail_bytes - 1 - i] = static_cast<unsigned char>(bit_length >> (8 * i));
  }
  for (std::size_t offset = 0; offset < tail_bytes; offset += k_block_bytes) compress(hash, tail.data() + offset);

  static constexpr char k_hex_digits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(64);
  for (const std::uint32_t word : hash) {
    for (int shift = 28; shift >= 0; shift -= 4) hex.push_back(k_hex_digits[(word >> shift) & 0xfU]);
  }
  return hex;
}

}  // namespace ess
