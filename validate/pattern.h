// Kernel-name patterns for the category maps of `ess-sim validate` (validate/kineto-categories.json).
//
// A small regular-expression matcher in the style of Thompson's NFA construction run as a Pike VM
// (Russ Cox, "Regular Expression Matching Can Be Simple And Fast", 2007): the pattern compiles to a
// program of at most a few instructions per pattern character, and a search walks the name once,
// keeping the set of live program positions. Time is O(name length x program size), memory
// O(program size), and nothing recurses on the name, so no name (Kineto kernel names of tens of
// kilobytes exist) and no pattern can overflow the stack or backtrack for minutes, as std::regex did.
//
// Supported syntax (a subset of ECMAScript regular expressions, matched byte by byte):
//   literals            any byte other than the metacharacters . [ ] ( ) { } | * + ? ^ $ and the
//                       backslash
//   .                   any byte except \n and \r
//   [abc] [a-z_] [^0-9] character classes with ranges and negation; \d \w \s \D \W \S and escaped
//                       characters (\] \\ \- \^ ...) inside; `-` first or last and `]` first
//                       are literal
//   \d \w \s \D \W \S   digit [0-9], word [A-Za-z0-9_], space [ \t\n\r\f\v] and their complements
//   \. \( \\ ...        an escaped metacharacter (or / - , : < > # " ' = ! & % @ ~ `) is literal;
//                       \t \n \r \f \v are the control characters
//   * + ?               repetition (a lazy form such as *? is accepted: for a yes/no search it
//                       changes nothing)
//   |  ( )  (?: )       alternation and grouping (groups capture nothing)
//   ^ $                 start and end of the name
// Matching is case-insensitive (ASCII letters) and searches anywhere in the name, as
// std::regex_search did. Anything else is rejected with the character position: backreferences
// (\1), lookaround ((?= (?! (?<), counted repetition ({m,n}), word boundaries (\b), Unicode and
// POSIX classes (\p{..}, [[:alpha:]]), other escapes, and patterns longer than kMaxPatternLength.
#pragma once

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sim/base/error.h"

namespace ess {

// Longest pattern accepted: the shipped rules are under 200 characters; a limit keeps the
// program (and so the cost per matched byte) small.
inline constexpr std::size_t kMaxPatternLength = 1000;
// Deepest nesting of groups accepted (the parser recurses once per group level).
inline constexpr std::size_t kMaxPatternGroupDepth = 32;

// Bad or unsupported pattern syntax; `position` is the 0-based byte offset in the pattern.
class PatternError : public InputError {
 public:
  PatternError(std::size_t position, const std::string& message);
  [[nodiscard]] std::size_t position() const { return position_; }

 private:
  std::size_t position_;
};

class NamePattern {
 public:
  // Throws PatternError for syntax outside the subset above.
  explicit NamePattern(std::string_view pattern);

  // Whether the pattern matches anywhere in `name` (case-insensitive).
  [[nodiscard]] bool search(std::string_view name) const;

  // Program size (instructions), for tests of the size bound.
  [[nodiscard]] std::size_t size() const { return program_.size(); }

  enum class Op : std::uint8_t { byte_set, split, jump, line_start, line_end, match };
  struct Instruction {
    Op op = Op::match;
    std::uint32_t x = 0;  // byte_set: index into sets_; split/jump: target
    std::uint32_t y = 0;  // split: second target
  };

 private:
  std::vector<Instruction> program_;
  std::vector<std::bitset<256>> sets_;
};

}  // namespace ess
