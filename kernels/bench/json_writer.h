// A small streaming JSON writer, so that ess-bench builds on a GPU machine with nothing but CUDA
// (no nlohmann_json there). It writes RFC 8259 JSON with a fixed layout, so the same measurements
// give byte-identical files:
//  - a block container puts each member on its own line, indented by two spaces per level;
//  - an inline container keeps its members on one line, separated by ", " (and every container
//    inside an inline one is inline too);
//  - a member is `"key": value`; an empty container is {} or [].
// Numbers: integers as decimal integers; doubles with 17 significant digits (printf %.17g), which
// reads back as the same double; NaN and infinities have no JSON form and are rejected.
// Strings: see json_quote.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ess::bench {

enum class Layout { block, inline_ };

class JsonWriter {
 public:
  void begin_object(Layout layout = Layout::block);
  void end_object();
  void begin_array(Layout layout = Layout::block);
  void end_array();

  // The next member's name; only inside an object, once per value.
  void key(std::string_view name);

  void string(std::string_view value);
  void integer(std::int64_t value);
  // Throws std::invalid_argument for NaN or an infinity (the document is left unchanged).
  void number(double value);
  void boolean(bool value);
  void null();

  // The finished document with a final newline. Throws std::logic_error while a container is
  // open or before the top-level value is written.
  [[nodiscard]] std::string finish() const;

 private:
  struct Frame {
    bool object = false;
    bool inline_ = false;
    int members = 0;
    bool have_key = false;
  };

  void before_value();
  void open(bool object, Layout layout);
  void close(bool object);

  std::string out_;
  std::vector<Frame> stack_;
  bool done_ = false;
};

// `value` as a quoted, escaped JSON string: '"' and '\' escaped, \b \f \n \r \t by name, other
// control characters as \u00XX. Valid UTF-8 passes through; each byte of an invalid sequence (a
// GPU name or a path need not be UTF-8) becomes U+FFFD, so the output is always valid JSON.
[[nodiscard]] std::string json_quote(std::string_view value);

// `value` as a JSON number (%.17g). Throws std::invalid_argument for NaN or an infinity.
[[nodiscard]] std::string json_number(double value);

}  // namespace ess::bench
