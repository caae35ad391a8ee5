#include "validate/trace_json.h"

#include <utility>
#include <vector>

#include "sim/config/json_text.h"
#include "validate/trace.h"

namespace ess {

namespace {

// Line and column (1-based, the column in UTF-8 characters) of the 0-based byte offset `byte`.
std::pair<std::size_t, std::size_t> line_column(std::string_view text, std::size_t byte) {
  std::size_t line = 1;
  std::size_t column = 1;
  const std::size_t end = std::min(byte, text.size());
  for (std::size_t i = 0; i < end; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      ++line;
      column = 1;
    } else if ((c & 0xC0) != 0x80) {
      ++column;
    }
  }
  return {line, column};
}

// nlohmann's message without its "[json.exception.parse_error.101] " tag and its own position.
std::string strip_prefix(const std::string& what) {
  std::string m = what;
  if (!m.empty() && m.front() == '[') {
    if (const auto close = m.find("] "); close != std::string::npos) m = m.substr(close + 2);
  }
  if (m.rfind("parse error", 0) == 0) {
    if (const auto colon = m.find(": "); colon != std::string::npos) m = m.substr(colon + 2);
  }
  return m;
}

// Builds the document as nlohmann's own DOM parser does, with the checks added. Each event costs
// O(log keys) (the object's std::map), so the whole parse is O(n log n) at worst.
class Builder : public nlohmann::json_sax<nlohmann::json> {
 public:
  Builder(std::string_view text, const std::string& origin) : text_(text), origin_(origin) {}

  nlohmann::json& result() { return root_; }

  bool null() override { return put(nullptr); }
  bool boolean(bool v) override { return put(v); }
  bool number_integer(number_integer_t v) override { return put(v); }
  bool number_unsigned(number_unsigned_t v) override { return put(v); }
  bool number_float(number_float_t v, const string_t& /*text*/) override { return put(v); }
  bool string(string_t& v) override { return put(std::move(v)); }
  bool binary(binary_t& v) override { return put(nlohmann::json::binary(std::move(v))); }

  bool start_object(std::size_t /*elements*/) override { return open(nlohmann::json::object()); }
  bool start_array(std::size_t /*elements*/) override { return open(nlohmann::json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }

  bool key(string_t& k) override {
    Frame& f = frames_.back();
    auto& object = f.value->get_ref<nlohmann::json::object_t&>();
    if (object.contains(k)) {
      throw TraceError(origin_, pointer_append(pointer(frames_.size() - 1), k),
                       "duplicate key \"" + k + "\" (each key may appear once per object)");
    }
    f.key = k;
    f.pending = &object[k];
    return true;
  }

  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& e) override {
    // `position` counts the bytes read, the offending one included.
    const auto [line, column] = line_column(text_, position > 0 ? position - 1 : 0);
    throw TraceError(origin_, "",
                     "invalid JSON at line " + std::to_string(line) + ", column " + std::to_string(column) + ": " +
                         strip_prefix(e.what()));
  }

 private:
  struct Frame {
    nlohmann::json* value = nullptr;
    nlohmann::json* pending = nullptr;  // objects: the member the next value fills
    std::string key;                    // objects: the current key
    std::size_t index = 0;              // arrays: elements so far
  };

  // The JSON pointer of the value being read in frame `count` - 1 (all frames below `count`).
  std::string pointer(std::size_t count) const {
    std::string p;
    for (std::size_t i = 0; i < count; ++i) {
      const Frame& f = frames_[i];
      p = f.value->is_object() ? pointer_append(p, f.key) : pointer_append(p, std::to_string(f.index == 0 ? 0 : f.index - 1));
    }
    return p;
  }

  // Where the next value goes: the root, the pending object member, or a new array element.
  nlohmann::json* slot() {
    if (frames_.empty()) return &root_;
    Frame& f = frames_.back();
    if (f.value->is_object()) return f.pending;
    auto& array = f.value->get_ref<nlohmann::json::array_t&>();
    array.emplace_back();
    ++f.index;
    return &array.back();
  }

  template <typename T>
  bool put(T&& v) {
    *slot() = nlohmann::json(std::forward<T>(v));
    return true;
  }

  bool open(nlohmann::json container) {
    nlohmann::json* target = slot();
    if (frames_.size() >= kMaxJsonDepth) {
      throw TraceError(origin_, pointer(frames_.size()),
                       "JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                           " levels (no ess-sim input needs more than a few)");
    }
    *target = std::move(container);
    // Pointers into the parent stay valid: a std::map never moves its nodes, and an array's
    // elements are only appended to while it is the innermost frame.
    frames_.push_back(Frame{target, nullptr, {}, 0});
    return true;
  }

  bool close() {
    frames_.pop_back();
    return true;
  }

  std::string_view text_;
  const std::string& origin_;
  nlohmann::json root_;
  std::vector<Frame> frames_;
};

}  // namespace

nlohmann::json parse_trace_json(std::string_view text, const std::string& origin) {
  Builder builder(text, origin);
  nlohmann::json::sax_parse(text.begin(), text.end(), &builder);
  return std::move(builder.result());
}

}  // namespace ess
