// Recorded top-k selections: a compact binary file, its writer and ReplayAccess, an AccessModel
// that replays it. A trace recorded from a real model run (or from any AccessModel) drives the
// pool simulation exactly as the generator that wrote it would.
//
// File format, version 1 (all fixed-width integers little-endian; "varint" is unsigned LEB128:
// 7 bits per byte, low bits first, high bit set on every byte but the last, at most 10 bytes):
//
//   offset  size  field
//   0       8     magic, the ASCII bytes "ESS-TOPK"
//   8       4     u32 version = 1
//   12      4     u32 layers   >= 1
//   16      4     u32 requests >= 1
//   20      4     u32 top_k    >= 1
//   24      4     u32 steps    number of step blocks that follow
//   28            step blocks, in strictly increasing step order; the file ends after the last one
//
//   step block:   varint zigzag(step)   (step = a signed 32-bit number: zigzag maps 0,-1,1,-2.. to 0,1,2,3..)
//                 varint context        (< 2^31; positions are 0 .. context-1)
//                 layers x requests records, layer-major: (layer 0, request 0), (0, 1), .., (1, 0), ..
//   record:       varint layer, varint request   (must equal the position in that order)
//                 varint count                    (must equal min(top_k, context))
//                 count varints: the first selected position, then each gap to the next (>= 1)
//
// A selection of 2048 of 32K positions takes about 1.1 bytes per entry (most gaps are < 128).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/base/error.h"
#include "sim/offload/access_model.h"

namespace ess {

// A trace file that cannot be read, is malformed, or cannot be written. The message names the file
// and, for malformed content, the byte offset where reading failed:
// "trace.bin: byte 41: position 40000 out of range [0, 32768)".
class AccessTraceError : public InputError {
 public:
  AccessTraceError(std::filesystem::path path, std::optional<std::uint64_t> offset,
                   const std::string& message);

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  [[nodiscard]] std::optional<std::uint64_t> offset() const { return offset_; }
  [[nodiscard]] const std::string& message() const { return message_; }

 private:
  std::filesystem::path path_;
  std::optional<std::uint64_t> offset_;
  std::string message_;
};

// One step to record: its number (negative for warm-up) and the context all requests have then.
struct TraceStep {
  int step = 0;
  std::int64_t context = 0;
  bool operator==(const TraceStep&) const = default;
};

// Records `model`'s selections for every step in `steps` (strictly increasing; contexts in
// [0, 2^31)), every layer in [0, layers) and request in [0, requests), calling select in file order
// (step, then layer, then request). The file is written whole or not at all (temporary file, then
// rename). Throws InternalError for bad arguments or if the model returns a selection that breaks
// the AccessModel contract, AccessTraceError if the file cannot be written.
void write_access_trace(const std::filesystem::path& path, AccessModel& model, int layers,
                        int requests, std::int64_t top_k, const std::vector<TraceStep>& steps);

class ReplayAccess final : public AccessModel {
 public:
  // Reads and validates the whole file: magic, version, header ranges, every step, context, layer,
  // request, count and position, nothing missing and nothing after the last block. Throws
  // AccessTraceError naming the file and the offending byte offset.
  explicit ReplayAccess(std::filesystem::path path);
  // The same from the file's bytes; `origin` names them in errors.
  ReplayAccess(std::filesystem::path origin, std::string bytes);

  // The recorded selection. Any order of calls is accepted (replay is random access). Throws
  // InputError for a step, layer or request that the file does not hold, or a context
  // different from the recorded one.
  void select(int step, int layer, int request, std::int64_t context,
              std::vector<std::int64_t>& out) override;

  [[nodiscard]] int layers() const { return layers_; }
  [[nodiscard]] int requests() const { return requests_; }
  [[nodiscard]] std::int64_t top_k() const { return top_k_; }
  [[nodiscard]] const std::vector<TraceStep>& steps() const { return steps_; }
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

  // Throws AccessTraceError naming what `demand` needs that the file lacks (replay_demand.cpp).
  void check_serves(const AccessDemand& demand) const override;

 private:
  std::filesystem::path path_;
  std::string bytes_;
  int layers_ = 0;
  int requests_ = 0;
  std::int64_t top_k_ = 0;
  std::vector<TraceStep> steps_;
  std::vector<std::size_t> record_offsets_;  // [step][layer][request]: offset of the count varint
};

}  // namespace ess
