#include "validate/pattern.h"

#include <cctype>
#include <utility>

namespace ess {

namespace {

using ByteSet = std::bitset<256>;

ByteSet range(unsigned char lo, unsigned char hi) {
  ByteSet s;
  for (unsigned c = lo; c <= hi; ++c) s.set(c);
  return s;
}

ByteSet digits() { return range('0', '9'); }
ByteSet word() { return range('0', '9') | range('a', 'z') | range('A', 'Z') | ByteSet().set('_'); }
ByteSet space() {
  ByteSet s;
  for (const char c : {' ', '\t', '\n', '\r', '\f', '\v'}) s.set(static_cast<unsigned char>(c));
  return s;
}

// Adds the other case of every ASCII letter in the set (case-insensitive matching).
ByteSet fold_case(ByteSet s) {
  for (unsigned c = 'a'; c <= 'z'; ++c) {
    const unsigned upper = c - 'a' + 'A';
    if (s.test(c) || s.test(upper)) {
      s.set(c);
      s.set(upper);
    }
  }
  return s;
}

bool is_metacharacter(char c) {
  return std::string_view(".[](){}|*+?^$\\").find(c) != std::string_view::npos;
}

// Escaped punctuation that is literal: the metacharacters and the characters ECMAScript's
// identity escapes commonly appear with in kernel-name patterns.
bool is_escapable_literal(char c) {
  return is_metacharacter(c) || std::string_view("/-,:<>#\"'=!&%@~` _;").find(c) != std::string_view::npos;
}

// The syntax tree: nodes in one vector, children by index.
struct Node {
  enum Kind { set, line_start, line_end, concat, alternation, star, plus, optional } kind = concat;
  ByteSet bytes;
  std::vector<std::size_t> children;
};

class Parser {
 public:
  explicit Parser(std::string_view p) : p_(p) {}

  std::vector<Node> parse(std::size_t& root) {
    root = alternation(0);
    if (pos_ < p_.size()) {
      // Only an unmatched ')' stops the top-level alternation early.
      throw PatternError(pos_, "unmatched ')'");
    }
    return std::move(nodes_);
  }

 private:
  std::size_t add(Node n) {
    nodes_.push_back(std::move(n));
    return nodes_.size() - 1;
  }

  bool at_end() const { return pos_ >= p_.size(); }
  char peek() const { return p_[pos_]; }

  std::size_t alternation(std::size_t depth) {
    std::vector<std::size_t> branches{concatenation(depth)};
    while (!at_end() && peek() == '|') {
      ++pos_;
      branches.push_back(concatenation(depth));
    }
    if (branches.size() == 1) return branches.front();
    return add(Node{Node::alternation, {}, std::move(branches)});
  }

  std::size_t concatenation(std::size_t depth) {
    std::vector<std::size_t> items;
    while (!at_end() && peek() != '|' && peek() != ')') items.push_back(repetition(depth));
    return add(Node{Node::concat, {}, std::move(items)});
  }

  std::size_t repetition(std::size_t depth) {
    std::size_t atom_index = atom(depth);
    const bool repeatable = nodes_[atom_index].kind != Node::line_start && nodes_[atom_index].kind != Node::line_end;
    bool repeated = false;
    while (!at_end() && (peek() == '*' || peek() == '+' || peek() == '?')) {
      if (repeated) throw PatternError(pos_, std::string("nothing to repeat before '") + peek() + "'");
      if (!repeatable) throw PatternError(pos_, "an anchor (^ or $) cannot be repeated");
      const char q = peek();
      ++pos_;
      const Node::Kind kind = q == '*' ? Node::star : q == '+' ? Node::plus : Node::optional;
      atom_index = add(Node{kind, {}, {atom_index}});
      repeated = true;
      // A lazy quantifier (*? +? ??) finds the same yes/no answer.
      if (!at_end() && peek() == '?') ++pos_;
    }
    if (!at_end() && peek() == '{') {
      throw PatternError(pos_, "counted repetition {m,n} is not supported (write the repetitions out, or use * + ?)");
    }
    return atom_index;
  }

  std::size_t atom(std::size_t depth) {
    const std::size_t at = pos_;
    const char c = peek();
    ++pos_;
    switch (c) {
      case '.': {
        ByteSet s;
        s.set();
        s.reset('\n');
        s.reset('\r');
        return add(Node{Node::set, s, {}});
      }
      case '^': return add(Node{Node::line_start, {}, {}});
      case '$': return add(Node{Node::line_end, {}, {}});
      case '[': return add(Node{Node::set, fold_case(bracket(at)), {}});
      case '(': return group(at, depth);
      case '\\': return add(Node{Node::set, fold_case(escape(at, false)), {}});
      case '*':
      case '+':
      case '?': throw PatternError(at, std::string("nothing to repeat before '") + c + "'");
      case '{':
      case '}': throw PatternError(at, "counted repetition {m,n} is not supported (escape a literal brace as \\{ or \\})");
      default: {
        ByteSet s;
        s.set(static_cast<unsigned char>(c));
        return add(Node{Node::set, fold_case(s), {}});
      }
    }
  }

  std::size_t group(std::size_t at, std::size_t depth) {
    if (depth + 1 > kMaxPatternGroupDepth) {
      throw PatternError(at, "groups nested deeper than " + std::to_string(kMaxPatternGroupDepth) + " levels");
    }
    if (!at_end() && peek() == '?') {
      if (pos_ + 1 < p_.size() && p_[pos_ + 1] == ':') {
        pos_ += 2;
      } else {
        throw PatternError(at, "lookaround and other (? groups are not supported (only (...) and (?:...))");
      }
    }
    const std::size_t inner = alternation(depth + 1);
    if (at_end() || peek() != ')') throw PatternError(at, "unmatched '('");
    ++pos_;
    return inner;
  }

  // After a backslash (at `at`); `in_class`: inside [...].
  ByteSet escape(std::size_t at, bool in_class) {
    if (at_end()) throw PatternError(at, "a pattern cannot end with a single backslash (write \\\\ for one)");
    const char e = peek();
    ++pos_;
    switch (e) {
      case 'd': return digits();
      case 'D': return ~digits();
      case 'w': return word();
      case 'W': return ~word();
      case 's': return space();
      case 'S': return ~space();
      case 't': return ByteSet().set('\t');
      case 'n': return ByteSet().set('\n');
      case 'r': return ByteSet().set('\r');
      case 'f': return ByteSet().set('\f');
      case 'v': return ByteSet().set('\v');
      default: break;
    }
    if (e >= '0' && e <= '9') throw PatternError(at, "backreferences (\\1 ...) are not supported");
    if (e == 'b' || e == 'B') {
      throw PatternError(at, in_class ? "\\b inside [...] is not supported" : "word boundaries (\\b, \\B) are not supported");
    }
    if (!is_escapable_literal(e)) {
      throw PatternError(at, std::string("unsupported escape \\") + e +
                                 " (supported: \\d \\w \\s \\D \\W \\S \\t \\n \\r \\f \\v and escaped punctuation)");
    }
    return ByteSet().set(static_cast<unsigned char>(e));
  }

  // After '[' (at `at`): the set of bytes the class matches, before case folding.
  ByteSet bracket(std::size_t at) {
    bool negate = false;
    if (!at_end() && peek() == '^') {
      negate = true;
      ++pos_;
    }
    ByteSet s;
    bool first = true;
    for (;;) {
      if (at_end()) throw PatternError(at, "unterminated character class '['");
      const std::size_t item_at = pos_;
      char c = peek();
      if (c == ']' && !first) {
        ++pos_;
        break;
      }
      first = false;
      if (c == '[' && pos_ + 1 < p_.size() && (p_[pos_ + 1] == ':' || p_[pos_ + 1] == '=' || p_[pos_ + 1] == '.')) {
        throw PatternError(item_at, "POSIX classes such as [:alpha:] are not supported (use \\w, \\d, \\s or ranges)");
      }
      ++pos_;
      // One item: a single byte, an escape, or a range lo-hi.
      bool single = true;
      unsigned char lo = static_cast<unsigned char>(c);
      if (c == '\\') {
        const ByteSet e = escape(item_at, true);
        if (e.count() == 1) {
          for (unsigned b = 0; b < 256; ++b) {
            if (e.test(b)) lo = static_cast<unsigned char>(b);
          }
        } else {
          s |= e;
          single = false;
        }
      }
      const bool range_follows = single && pos_ + 1 < p_.size() && peek() == '-' && p_[pos_ + 1] != ']';
      if (!range_follows) {
        if (single) s.set(lo);
        continue;
      }
      ++pos_;  // '-'
      const std::size_t hi_at = pos_;
      unsigned char hi = static_cast<unsigned char>(peek());
      ++pos_;
      if (hi == '\\') {
        const ByteSet e = escape(hi_at, true);
        if (e.count() != 1) throw PatternError(hi_at, "a range cannot end in a class such as \\d");
        for (unsigned b = 0; b < 256; ++b) {
          if (e.test(b)) hi = static_cast<unsigned char>(b);
        }
      }
      if (hi < lo) throw PatternError(item_at, "range out of order in character class");
      s |= range(lo, hi);
    }
    // Case folding happens before negation, as ECMAScript's case-insensitive classes do:
    // [^a-z] excludes A-Z too.
    return negate ? ~fold_case(s) : s;
  }

  std::string_view p_;
  std::size_t pos_ = 0;
  std::vector<Node> nodes_;
};

// Code generation (Thompson's construction); recursion is bounded by the group depth limit.
class Compiler {
 public:
  Compiler(const std::vector<Node>& nodes, std::vector<NamePattern::Instruction>& program,
           std::vector<ByteSet>& sets)
      : nodes_(nodes), program_(program), sets_(sets) {}

  void emit(std::size_t index) {
    using Op = NamePattern::Op;
    const Node& n = nodes_[index];
    switch (n.kind) {
      case Node::set:
        sets_.push_back(n.bytes);
        push(Op::byte_set, static_cast<std::uint32_t>(sets_.size() - 1));
        break;
      case Node::line_start: push(Op::line_start); break;
      case Node::line_end: push(Op::line_end); break;
      case Node::concat:
        for (const std::size_t c : n.children) emit(c);
        break;
      case Node::alternation: {
        // split L1, next; L1: a; jump end; next: split L2, next2; ... last branch; end:
        std::vector<std::size_t> jumps;
        for (std::size_t i = 0; i + 1 < n.children.size(); ++i) {
          const std::size_t split = push(Op::split);
          program_[split].x = here();
          emit(n.children[i]);
          jumps.push_back(push(Op::jump));
          program_[split].y = here();
        }
        emit(n.children.back());
        for (const std::size_t j : jumps) program_[j].x = here();
        break;
      }
      case Node::star: {
        const std::size_t split = push(Op::split);
        program_[split].x = here();
        emit(n.children.front());
        push(Op::jump, static_cast<std::uint32_t>(split));
        program_[split].y = here();
        break;
      }
      case Node::plus: {
        const std::uint32_t body = here();
        emit(n.children.front());
        const std::size_t split = push(Op::split, body);
        program_[split].y = here();
        break;
      }
      case Node::optional: {
        const std::size_t split = push(Op::split);
        program_[split].x = here();
        emit(n.children.front());
        program_[split].y = here();
        break;
      }
    }
  }

  std::uint32_t here() const { return static_cast<std::uint32_t>(program_.size()); }

  std::size_t push(NamePattern::Op op, std::uint32_t x = 0, std::uint32_t y = 0) {
    program_.push_back({op, x, y});
    return program_.size() - 1;
  }

 private:
  const std::vector<Node>& nodes_;
  std::vector<NamePattern::Instruction>& program_;
  std::vector<ByteSet>& sets_;
};

// The set of live program positions for one position of the name: a sparse set (Briggs and
// Torczon), cleared in O(1), so a step costs only what is live.
class ThreadList {
 public:
  explicit ThreadList(std::size_t n) : dense_(n), sparse_(n) {}
  bool insert(std::uint32_t pc) {
    const std::uint32_t i = sparse_[pc];
    if (i < size_ && dense_[i] == pc) return false;
    sparse_[pc] = static_cast<std::uint32_t>(size_);
    dense_[size_++] = pc;
    return true;
  }
  void clear() { size_ = 0; }
  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] std::uint32_t operator[](std::size_t i) const { return dense_[i]; }

 private:
  std::vector<std::uint32_t> dense_;
  std::vector<std::uint32_t> sparse_;
  std::size_t size_ = 0;
};

}  // namespace

PatternError::PatternError(std::size_t position, const std::string& message)
    : InputError("at character " + std::to_string(position + 1) + ": " + message), position_(position) {}

NamePattern::NamePattern(std::string_view pattern) {
  if (pattern.size() > kMaxPatternLength) {
    throw PatternError(kMaxPatternLength, "a pattern of " + std::to_string(pattern.size()) +
                                              " characters is longer than the " + std::to_string(kMaxPatternLength) +
                                              " accepted");
  }
  std::size_t root = 0;
  const std::vector<Node> nodes = Parser(pattern).parse(root);
  Compiler compiler(nodes, program_, sets_);
  compiler.emit(root);
  compiler.push(Op::match);
}

bool NamePattern::search(std::string_view name) const {
  const std::size_t n = program_.size();
  ThreadList current(n);
  ThreadList next(n);
  std::vector<std::uint32_t> stack;
  stack.reserve(n);
  // Follows the empty transitions from `pc` at name position `pos`, adding every byte-consuming
  // instruction reached to `list`; true when the match instruction is reached. An explicit stack,
  // and each instruction is visited at most once per position (the list doubles as the visited set).
  const auto add = [&](ThreadList& list, std::uint32_t start, std::size_t pos) {
    stack.clear();
    stack.push_back(start);
    while (!stack.empty()) {
      const std::uint32_t pc = stack.back();
      stack.pop_back();
      if (!list.insert(pc)) continue;
      const Instruction& in = program_[pc];
      switch (in.op) {
        case Op::match: return true;
        case Op::byte_set: break;
        case Op::jump: stack.push_back(in.x); break;
        case Op::split:
          stack.push_back(in.y);
          stack.push_back(in.x);
          break;
        case Op::line_start:
          if (pos == 0) stack.push_back(pc + 1);
          break;
        case Op::line_end:
          if (pos == name.size()) stack.push_back(pc + 1);
          break;
      }
    }
    return false;
  };
  for (std::size_t pos = 0; pos <= name.size(); ++pos) {
    // A new attempt starts at every position: the search is unanchored.
    if (add(current, 0, pos)) return true;
    if (pos == name.size()) break;
    const auto byte = static_cast<unsigned char>(name[pos]);
    for (std::size_t i = 0; i < current.size(); ++i) {
      const Instruction& in = program_[current[i]];
      if (in.op == Op::byte_set && sets_[in.x].test(byte) && add(next, current[i] + 1, pos + 1)) return true;
    }
    std::swap(current, next);
    next.clear();
  }
  return false;
}

}  // namespace ess
