#include "sim/engine/access_store.h"

#include <cstring>
#include <fstream>
#include <iterator>

#include "sim/io/atomic_file.h"
#include "sim/io/sha256.h"

namespace ess {

namespace {

constexpr std::string_view kMagic = "ess-sim access store v1\n";

std::filesystem::path entry_path(const std::filesystem::path& dir, const std::string& key) {
  return dir / (sha256_hex(key) + ".bin");
}

}  // namespace

std::optional<AccessSteps> load_access_steps(const std::filesystem::path& dir, const std::string& key,
                                             std::size_t steps, std::size_t layers) {
  std::ifstream in(entry_path(dir, key), std::ios::binary);
  if (!in) return std::nullopt;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // magic, key length (8 bytes), key, steps and layers (8 bytes each), the doubles.
  const std::size_t values = steps * layers * 5;
  const std::size_t expected = kMagic.size() + 8 + key.size() + 16 + values * sizeof(double);
  if (text.size() != expected || text.compare(0, kMagic.size(), kMagic) != 0) return std::nullopt;
  std::size_t pos = kMagic.size();
  const auto read_u64 = [&] {
    std::uint64_t v = 0;
    std::memcpy(&v, text.data() + pos, 8);
    pos += 8;
    return v;
  };
  if (read_u64() != key.size() || text.compare(pos, key.size(), key) != 0) return std::nullopt;
  pos += key.size();
  if (read_u64() != steps || read_u64() != layers) return std::nullopt;
  AccessSteps data(steps, std::vector<LayerAccess>(layers));
  for (auto& step : data) {
    for (auto& l : step) {
      for (double* field : {&l.misses, &l.misses_stderr, &l.hits, &l.runs, &l.evictions}) {
        std::memcpy(field, text.data() + pos, sizeof(double));
        pos += sizeof(double);
      }
    }
  }
  return data;
}

void store_access_steps(const std::filesystem::path& dir, const std::string& key, const AccessSteps& data) {
  std::string text(kMagic);
  const auto put_u64 = [&](std::uint64_t v) { text.append(reinterpret_cast<const char*>(&v), 8); };
  put_u64(key.size());
  text += key;
  put_u64(data.size());
  put_u64(data.empty() ? 0 : data.front().size());
  for (const auto& step : data) {
    for (const auto& l : step) {
      for (const double field : {l.misses, l.misses_stderr, l.hits, l.runs, l.evictions}) {
        text.append(reinterpret_cast<const char*>(&field), sizeof(double));
      }
    }
  }
  ensure_directory(dir);
  write_file_atomically(entry_path(dir, key), text);
}

}  // namespace ess
