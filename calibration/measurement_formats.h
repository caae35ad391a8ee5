// The measurement formats `ess-sim calibrate` reads, one registry per kind of file. A format is
// recognised from the content, never from the file name: a JSON file by its "schema" field, a CSV
// table by its header (the first format in csv_formats() whose detect() accepts the table reads it,
// so a format whose columns are a superset of another's comes first).
//
// Each format lives in its own file, format_<name>.cpp, and defines one of the objects below.
// Adding a format: write format_<name>.cpp with a detect and a read function (the helpers they
// share are in format_helpers.h), declare its object here, add one line to the registry in
// measurements.cpp and the file to calibration/CMakeLists.txt. The reader fills `out` and records
// what it used and skipped in `in`; read_measurements sets `in.format` from the format's name, checks
// that something was used and merges repeated shapes.
#pragma once

#include <span>

#include <nlohmann/json_fwd.hpp>

#include "calibration/csv_table.h"
#include "calibration/measurements.h"

namespace ess::measurement {

// A CSV table format.
struct CsvFormat {
  const char* name;  // MeasurementInput::format, as in the profile's inputs
  const char* what;  // a phrase naming the table, for errors: "a Vidur compute CSV"
  bool (*detect)(const CsvTable& table);
  void (*read)(const CsvTable& table, MeasurementInput& in, MeasurementSet& out, const ReadOptions& options);
};

// A JSON document format, recognised by its "schema" value.
struct JsonFormat {
  const char* name;    // MeasurementInput::format
  const char* schema;  // the document's "schema"
  void (*read)(const nlohmann::json& doc, MeasurementInput& in, MeasurementSet& out, const ReadOptions& options);
};

// The registries, in detection order.
std::span<const CsvFormat* const> csv_formats();
std::span<const JsonFormat* const> json_formats();

// The formats (format_<name>.cpp).
extern const JsonFormat kEssBenchFormat;          // format_ess_bench.cpp
extern const CsvFormat kVidurComputeFormat;       // format_vidur.cpp
extern const CsvFormat kVidurNetworkFormat;       // format_vidur.cpp
extern const CsvFormat kLigerNormFormat;          // format_liger.cpp
extern const CsvFormat kDeepGemmFormat;           // format_deepgemm.cpp
extern const CsvFormat kFlashMlaFormat;           // format_flashmla.cpp
extern const CsvFormat kFlashMlaDenseFormat;      // format_flashmla.cpp
extern const CsvFormat kFlashAttentionFormat;     // format_flashattention.cpp
extern const CsvFormat kDeepEpLowLatencyFormat;   // format_deepep.cpp
extern const CsvFormat kDeepEpNormalFormat;       // format_deepep.cpp
extern const CsvFormat kPcieSweepFormat;          // format_pcie_sweep.cpp

}  // namespace ess::measurement
