#include "kernels/bench/json_writer.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "sim/base/text.h"

namespace ess::bench {

std::string json_quote(std::string_view value) {
  std::string out;
  out.reserve(value.size() + 2);
  out += '"';
  for (std::size_t i = 0; i < value.size();) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (c >= 0x80) {
      const std::size_t n = utf8_sequence_length(value, i);
      if (n == 0) {
        out += "\xEF\xBF\xBD";  // U+FFFD for each byte of an invalid sequence
        ++i;
      } else {
        out.append(value, i, n);
        i += n;
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
          out += escaped;
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  out += '"';
  return out;
}

std::string json_number(double value) {
  if (!std::isfinite(value)) {
    throw std::invalid_argument(std::string("JSON has no representation for ") +
                                (std::isnan(value) ? "NaN" : "an infinity"));
  }
  // 17 significant digits identify every double uniquely (IEEE 754-2008, 5.12.2).
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  return buffer;
}

void JsonWriter::before_value() {
  if (done_) throw std::logic_error("JsonWriter: a second top-level value");
  if (stack_.empty()) return;
  Frame& f = stack_.back();
  if (f.object) {
    if (!f.have_key) throw std::logic_error("JsonWriter: a value in an object needs a key first");
    f.have_key = false;
    return;  // key() wrote the separator and indentation
  }
  if (f.members > 0) out_ += f.inline_ ? ", " : ",";
  if (!f.inline_) out_ += "\n" + std::string(2 * stack_.size(), ' ');
  ++f.members;
}

void JsonWriter::key(std::string_view name) {
  if (stack_.empty() || !stack_.back().object) {
    throw std::logic_error("JsonWriter: key \"" + std::string(name) + "\" outside an object");
  }
  Frame& f = stack_.back();
  if (f.have_key) throw std::logic_error("JsonWriter: two keys without a value");
  if (f.members > 0) out_ += f.inline_ ? ", " : ",";
  if (!f.inline_) out_ += "\n" + std::string(2 * stack_.size(), ' ');
  out_ += json_quote(name);
  out_ += ": ";
  f.have_key = true;
  ++f.members;
}

void JsonWriter::open(bool object, Layout layout) {
  before_value();
  const bool parent_inline = !stack_.empty() && stack_.back().inline_;
  out_ += object ? '{' : '[';
  stack_.push_back(Frame{object, parent_inline || layout == Layout::inline_, 0, false});
}

void JsonWriter::close(bool object) {
  if (stack_.empty() || stack_.back().object != object) {
    throw std::logic_error(object ? "JsonWriter: end_object without an open object"
                                  : "JsonWriter: end_array without an open array");
  }
  const Frame f = stack_.back();
  if (f.have_key) throw std::logic_error("JsonWriter: a key without a value");
  stack_.pop_back();
  if (f.members > 0 && !f.inline_) out_ += "\n" + std::string(2 * stack_.size(), ' ');
  out_ += object ? '}' : ']';
  if (stack_.empty()) done_ = true;
}

void JsonWriter::begin_object(Layout layout) { open(true, layout); }
void JsonWriter::end_object() { close(true); }
void JsonWriter::begin_array(Layout layout) { open(false, layout); }
void JsonWriter::end_array() { close(false); }

void JsonWriter::string(std::string_view value) {
  before_value();
  out_ += json_quote(value);
  if (stack_.empty()) done_ = true;
}

void JsonWriter::integer(std::int64_t value) {
  before_value();
  out_ += std::to_string(value);
  if (stack_.empty()) done_ = true;
}

void JsonWriter::number(double value) {
  const std::string text = json_number(value);  // throws before anything is written
  before_value();
  out_ += text;
  if (stack_.empty()) done_ = true;
}

void JsonWriter::boolean(bool value) {
  before_value();
  out_ += value ? "true" : "false";
  if (stack_.empty()) done_ = true;
}

void JsonWriter::null() {
  before_value();
  out_ += "null";
  if (stack_.empty()) done_ = true;
}

std::string JsonWriter::finish() const {
  if (!stack_.empty()) throw std::logic_error("JsonWriter: unclosed container");
  if (!done_) throw std::logic_error("JsonWriter: empty document");
  return out_ + "\n";
}

}  // namespace ess::bench
