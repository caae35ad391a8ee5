#include "sim/offload/access_trace.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <system_error>
#include <utility>

#include "sim/base/error.h"
#include "sim/io/read_file.h"

namespace ess {

namespace {

constexpr char kMagic[8] = {'E', 'S', 'S', '-', 'T', 'O', 'P', 'K'};
constexpr std::uint32_t kVersion = 1;
constexpr std::size_t kHeaderBytes = 28;
constexpr std::int64_t kMaxContext = std::numeric_limits<std::int32_t>::max();

std::string describe(const std::filesystem::path& path, std::optional<std::uint64_t> offset,
                     const std::string& message) {
  std::string text = path.string() + ": ";
  if (offset) text += "byte " + std::to_string(*offset) + ": ";
  return text + message;
}

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFFU));
}

void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80U) {
    out.push_back(static_cast<char>((v & 0x7FU) | 0x80U));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

std::uint64_t zigzag(std::int64_t v) {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}

std::int64_t unzigzag(std::uint64_t v) {
  return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1U);
}

// Sequential reader over the file's bytes; every failure names the offset where it happened.
class Cursor {
 public:
  Cursor(const std::filesystem::path& path, const std::string& bytes)
      : path_(path), bytes_(bytes) {}

  [[nodiscard]] std::size_t offset() const { return at_; }
  [[nodiscard]] bool at_end() const { return at_ == bytes_.size(); }
  void seek(std::size_t offset) { at_ = offset; }

  [[noreturn]] void fail(std::size_t offset, const std::string& message) const {
    throw AccessTraceError(path_, offset, message);
  }

  std::uint32_t u32(const char* what) {
    if (bytes_.size() - at_ < 4) fail(at_, std::string("truncated file: missing ") + what);
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      v |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes_[at_ + static_cast<std::size_t>(i)]))
           << (8 * i);
    }
    at_ += 4;
    return v;
  }

  std::uint64_t varint(const char* what) {
    const std::size_t start = at_;
    std::uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      if (at_ == bytes_.size()) fail(start, std::string("truncated file: missing ") + what);
      if (shift == 63 && (static_cast<unsigned char>(bytes_[at_]) & 0xFEU) != 0) {
        fail(start, std::string("varint too long for ") + what);
      }
      const auto byte = static_cast<unsigned char>(bytes_[at_++]);
      v |= static_cast<std::uint64_t>(byte & 0x7FU) << shift;
      if ((byte & 0x80U) == 0) return v;
    }
  }

 private:
  const std::filesystem::path& path_;
  const std::string& bytes_;
  std::size_t at_ = 0;
};

std::string range_text(std::int64_t hi) { return "[0, " + std::to_string(hi) + ")"; }

}  // namespace

AccessTraceError::AccessTraceError(std::filesystem::path path, std::optional<std::uint64_t> offset,
                                   const std::string& message)
    : InputError(describe(path, offset, message)),
      path_(std::move(path)),
      offset_(offset),
      message_(message) {}

// ---- writing ------------------------------------------------------------------------------------

void write_access_trace(const std::filesystem::path& path, AccessModel& model, int layers,
                        int requests, std::int64_t top_k, const std::vector<TraceStep>& steps) {
  if (layers < 1 || requests < 1) {
    throw InternalError("write_access_trace: layers and requests must be >= 1");
  }
  if (top_k < 1 || top_k > std::numeric_limits<std::uint32_t>::max()) {
    throw InternalError("write_access_trace: top_k must be in [1, 2^32)");
  }
  if (steps.size() > std::numeric_limits<std::uint32_t>::max()) {
    throw InternalError("write_access_trace: too many steps");
  }
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].context < 0 || steps[i].context > kMaxContext) {
      throw InternalError("write_access_trace: context " +
                          std::to_string(steps[i].context) + " outside [0, 2^31)");
    }
    if (i > 0 && steps[i].step <= steps[i - 1].step) {
      throw InternalError("write_access_trace: steps must increase strictly");
    }
  }

  static std::atomic<unsigned> counter{0};
  const std::filesystem::path temp =
      path.string() + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  // Whatever goes wrong (a write error, a broken model), the temporary file does not survive.
  struct RemoveUnlessRenamed {
    const std::filesystem::path& temp;
    bool renamed = false;
    ~RemoveUnlessRenamed() {
      if (renamed) return;
      std::error_code ignored;
      std::filesystem::remove(temp, ignored);
    }
  } guard{temp};
  auto cannot_write = [&](const std::string& why) {
    throw AccessTraceError(path, std::nullopt, "cannot write: " + why);
  };

  std::ofstream file(temp, std::ios::binary | std::ios::trunc);
  if (!file) cannot_write(std::strerror(errno));
  std::string block(kMagic, sizeof kMagic);
  put_u32(block, kVersion);
  put_u32(block, static_cast<std::uint32_t>(layers));
  put_u32(block, static_cast<std::uint32_t>(requests));
  put_u32(block, static_cast<std::uint32_t>(top_k));
  put_u32(block, static_cast<std::uint32_t>(steps.size()));

  std::vector<std::int64_t> selected;
  for (const TraceStep& ts : steps) {
    put_varint(block, zigzag(ts.step));
    put_varint(block, static_cast<std::uint64_t>(ts.context));
    const std::int64_t count = std::min(top_k, ts.context);
    for (int layer = 0; layer < layers; ++layer) {
      for (int request = 0; request < requests; ++request) {
        model.select(ts.step, layer, request, ts.context, selected);
        if (static_cast<std::int64_t>(selected.size()) != count) {
          throw InternalError("write_access_trace: model selected " +
                              std::to_string(selected.size()) + " entries, expected " +
                              std::to_string(count));
        }
        put_varint(block, static_cast<std::uint64_t>(layer));
        put_varint(block, static_cast<std::uint64_t>(request));
        put_varint(block, static_cast<std::uint64_t>(count));
        std::int64_t previous = -1;
        for (const std::int64_t p : selected) {
          if (p <= previous || p >= ts.context) {
            throw InternalError("write_access_trace: model selection not ascending, unique and "
                                "within the context at position " + std::to_string(p));
          }
          put_varint(block, static_cast<std::uint64_t>(previous < 0 ? p : p - previous));
          previous = p;
        }
      }
    }
    file.write(block.data(), static_cast<std::streamsize>(block.size()));
    if (!file) cannot_write(std::strerror(errno));
    block.clear();
  }
  if (!block.empty()) file.write(block.data(), static_cast<std::streamsize>(block.size()));
  file.close();
  if (!file) cannot_write(std::strerror(errno));
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) cannot_write(ec.message());
  guard.renamed = true;
}

// ---- reading ------------------------------------------------------------------------------------

namespace {
std::string read_trace_file(const std::filesystem::path& path) {
  std::string bytes;
  if (const ReadProblem problem = read_whole_file(path, bytes); problem != ReadProblem::none) {
    throw AccessTraceError(path, std::nullopt, describe(problem));
  }
  return bytes;
}
}  // namespace

ReplayAccess::ReplayAccess(std::filesystem::path path) : ReplayAccess(path, read_trace_file(path)) {}

ReplayAccess::ReplayAccess(std::filesystem::path origin, std::string bytes)
    : path_(std::move(origin)), bytes_(std::move(bytes)) {
  Cursor in(path_, bytes_);
  if (bytes_.size() < sizeof kMagic) in.fail(0, "truncated file: missing the magic \"ESS-TOPK\"");
  if (std::memcmp(bytes_.data(), kMagic, sizeof kMagic) != 0) {
    in.fail(0, "bad magic: not an ESS access trace (expected \"ESS-TOPK\")");
  }
  in.seek(sizeof kMagic);
  const std::size_t version_at = in.offset();
  const std::uint32_t version = in.u32("the version");
  if (version != kVersion) {
    in.fail(version_at, "unsupported version " + std::to_string(version) + " (this reader knows 1)");
  }
  auto header_field = [&](const char* what, std::uint32_t max) {
    const std::size_t at = in.offset();
    const std::uint32_t v = in.u32(what);
    if (v < 1 || v > max) {
      in.fail(at, std::string(what) + " " + std::to_string(v) + " outside [1, " +
                      std::to_string(max) + "]");
    }
    return v;
  };
  constexpr auto kIntMax = static_cast<std::uint32_t>(std::numeric_limits<int>::max());
  layers_ = static_cast<int>(header_field("layers", kIntMax));
  requests_ = static_cast<int>(header_field("requests", kIntMax));
  top_k_ = header_field("top_k", std::numeric_limits<std::uint32_t>::max());
  const std::uint32_t step_count = in.u32("the step count");
  const auto records_per_step =
      static_cast<std::uint64_t>(layers_) * static_cast<std::uint64_t>(requests_);
  // Each record takes at least 3 bytes: refuse counts the file cannot hold before allocating.
  if (static_cast<double>(step_count) * static_cast<double>(records_per_step) * 3.0 >
      static_cast<double>(bytes_.size())) {
    in.fail(kHeaderBytes, "truncated file: the header announces " + std::to_string(step_count) +
                              " steps of " + std::to_string(records_per_step) +
                              " records, more than the file can hold");
  }
  steps_.reserve(step_count);
  record_offsets_.reserve(static_cast<std::size_t>(step_count * records_per_step));

  for (std::uint32_t b = 0; b < step_count; ++b) {
    const std::size_t step_at = in.offset();
    const std::int64_t step = unzigzag(in.varint("a step number"));
    if (step < std::numeric_limits<int>::min() || step > std::numeric_limits<int>::max()) {
      in.fail(step_at, "step " + std::to_string(step) + " outside the 32-bit range");
    }
    if (!steps_.empty() && step <= steps_.back().step) {
      in.fail(step_at, "step " + std::to_string(step) + " out of order: steps must increase (after " +
                           std::to_string(steps_.back().step) + ")");
    }
    const std::size_t context_at = in.offset();
    const std::uint64_t context = in.varint("a context");
    if (context > static_cast<std::uint64_t>(kMaxContext)) {
      in.fail(context_at, "context " + std::to_string(context) + " outside [0, 2^31)");
    }
    const auto ctx = static_cast<std::int64_t>(context);
    steps_.push_back({static_cast<int>(step), ctx});
    const std::int64_t count = std::min(top_k_, ctx);

    for (int layer = 0; layer < layers_; ++layer) {
      for (int request = 0; request < requests_; ++request) {
        const std::size_t layer_at = in.offset();
        const std::uint64_t got_layer = in.varint("a layer");
        if (got_layer >= static_cast<std::uint64_t>(layers_)) {
          in.fail(layer_at, "layer " + std::to_string(got_layer) + " out of range " +
                                range_text(layers_));
        }
        const std::size_t request_at = in.offset();
        const std::uint64_t got_request = in.varint("a request");
        if (got_request >= static_cast<std::uint64_t>(requests_)) {
          in.fail(request_at, "request " + std::to_string(got_request) + " out of range " +
                                  range_text(requests_));
        }
        if (got_layer != static_cast<std::uint64_t>(layer) ||
            got_request != static_cast<std::uint64_t>(request)) {
          in.fail(layer_at, "record (layer " + std::to_string(got_layer) + ", request " +
                                std::to_string(got_request) + ") out of order: expected (layer " +
                                std::to_string(layer) + ", request " + std::to_string(request) +
                                ") of step " + std::to_string(step));
        }
        const std::size_t count_at = in.offset();
        const std::uint64_t got_count = in.varint("a selection size");
        if (got_count != static_cast<std::uint64_t>(count)) {
          in.fail(count_at, "selection of " + std::to_string(got_count) + " entries, expected " +
                                "min(top_k, context) = " + std::to_string(count));
        }
        record_offsets_.push_back(count_at);
        std::int64_t position = -1;
        for (std::int64_t i = 0; i < count; ++i) {
          const std::size_t at = in.offset();
          const std::uint64_t gap = in.varint("a selected position");
          if (i > 0 && gap == 0) {
            in.fail(at, "positions not strictly ascending (repeated position " +
                            std::to_string(position) + ")");
          }
          const auto limit = static_cast<std::uint64_t>(ctx);
          if (gap >= limit || (i > 0 && static_cast<std::uint64_t>(position) + gap >= limit)) {
            const std::string where = i == 0 ? std::to_string(gap)
                                             : std::to_string(position) + " + " + std::to_string(gap);
            in.fail(at, "position " + where + " out of range " + range_text(ctx));
          }
          const std::uint64_t next = i == 0 ? gap : static_cast<std::uint64_t>(position) + gap;
          position = static_cast<std::int64_t>(next);
        }
      }
    }
  }
  if (!in.at_end()) {
    in.fail(in.offset(), std::to_string(bytes_.size() - in.offset()) +
                             " unexpected bytes after the last step block");
  }
}

void ReplayAccess::select(int step, int layer, int request, std::int64_t context,
                          std::vector<std::int64_t>& out) {
  const auto it = std::lower_bound(steps_.begin(), steps_.end(), step,
                                   [](const TraceStep& s, int v) { return s.step < v; });
  if (it == steps_.end() || it->step != step) {
    throw InputError(path_.string() + ": step " + std::to_string(step) +
                     " is not recorded");
  }
  if (layer < 0 || layer >= layers_ || request < 0 || request >= requests_) {
    throw InputError(path_.string() + ": (layer " + std::to_string(layer) +
                     ", request " + std::to_string(request) +
                     ") outside the recorded " + std::to_string(layers_) +
                     " layers x " + std::to_string(requests_) + " requests");
  }
  if (context != it->context) {
    throw InputError(path_.string() + ": step " + std::to_string(step) +
                                " was recorded at context " + std::to_string(it->context) +
                                ", asked for " + std::to_string(context));
  }
  const auto index = static_cast<std::size_t>(it - steps_.begin()) *
                         static_cast<std::size_t>(layers_) * static_cast<std::size_t>(requests_) +
                     static_cast<std::size_t>(layer) * static_cast<std::size_t>(requests_) +
                     static_cast<std::size_t>(request);
  // Validated at load: plain decoding suffices.
  std::size_t at = record_offsets_[index];
  auto next = [&]() {
    std::uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      const auto byte = static_cast<unsigned char>(bytes_[at++]);
      v |= static_cast<std::uint64_t>(byte & 0x7FU) << shift;
      if ((byte & 0x80U) == 0) return v;
    }
  };
  const std::uint64_t count = next();
  out.resize(static_cast<std::size_t>(count));
  std::int64_t position = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    position = i == 0 ? static_cast<std::int64_t>(next()) : position + static_cast<std::int64_t>(next());
    out[static_cast<std::size_t>(i)] = position;
  }
}

}  // namespace ess
