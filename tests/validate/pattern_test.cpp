// The kernel-name pattern matcher (validate/pattern.h): the documented syntax, what it rejects,
// and the inputs that overflowed the stack or backtracked for minutes under std::regex.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "validate/pattern.h"
#include "validate/trace.h"

namespace {

bool matches(const std::string& pattern, const std::string& name) { return ess::NamePattern(pattern).search(name); }

nlohmann::json one_rule(const std::string& pattern) {
  return {{"schema", "ess-sim/kernel-categories/v1"}, {"rules", {{{"pattern", pattern}, {"category", "gemm"}}}}};
}

}  // namespace

TEST_CASE("patterns: literals match anywhere in the name, ignoring ASCII case") {
  CHECK(matches("gemm", "sm90_xmma_GEMM_bf16"));
  CHECK(matches("GeMm", "gemm"));
  CHECK_FALSE(matches("gemm", "gem"));
  CHECK_FALSE(matches("gemm", "g_emm"));
  CHECK(matches("", "anything"));  // the empty pattern matches, as std::regex_search did
  CHECK(matches("", ""));
}

TEST_CASE("patterns: dot, classes, ranges, negation and escapes") {
  CHECK(matches("ge.m", "gexm"));
  CHECK_FALSE(matches("ge.m", "gem"));
  CHECK_FALSE(matches("a.b", "a\nb"));
  CHECK(matches("sm[0-9][0-9]_", "kernel_sm90_x"));
  CHECK_FALSE(matches("sm[0-9][0-9]_", "sm9x_"));
  CHECK(matches("[a-z_]+gemm", "_gemm"));
  CHECK(matches("x[^0-9]y", "xay"));
  CHECK_FALSE(matches("x[^0-9]y", "x5y"));
  // Case folding comes before negation: [^a-z] excludes upper case too.
  CHECK_FALSE(matches("x[^a-z]y", "xAy"));
  CHECK(matches("x[A-Z]y", "xay"));
  CHECK(matches("[-a]", "-"));
  CHECK(matches("[a-]", "-"));
  CHECK(matches("[]]", "]"));
  CHECK(matches("[\\]x]", "]"));
  CHECK(matches("\\d+x", "k123x"));
  CHECK_FALSE(matches("\\d", "abc"));
  CHECK(matches("a\\wb", "a_b"));
  CHECK_FALSE(matches("a\\wb", "a-b"));
  CHECK(matches("a\\sb", "a b"));
  CHECK(matches("a\\Sb", "axb"));
  CHECK_FALSE(matches("a\\Sb", "a b"));
  CHECK(matches("[\\d_]x", "_x"));
  CHECK(matches("\\.", "a.b"));
  CHECK_FALSE(matches("\\.", "ab"));
  CHECK(matches("f\\(x\\)", "f(x)"));
  CHECK(matches("a\\\\b", "a\\b"));
  CHECK(matches("Memcpy HtoD", "Memcpy HtoD (Pinned -> Device)"));
}

TEST_CASE("patterns: repetition, alternation, groups and anchors") {
  CHECK(matches("ab*c", "ac"));
  CHECK(matches("ab*c", "abbbc"));
  CHECK_FALSE(matches("ab+c", "ac"));
  CHECK(matches("ab+c", "abc"));
  CHECK(matches("ab?c", "ac"));
  CHECK_FALSE(matches("ab?c", "abbc"));
  CHECK(matches("ab*?c", "abc"));  // lazy forms are accepted
  CHECK(matches("rms_?norm", "rmsnorm"));
  CHECK(matches("rms_?norm", "rms_norm"));
  CHECK(matches("cutlass|cublas", "void cublasLt::kernel"));
  CHECK_FALSE(matches("cutlass|cublas", "cudnn"));
  CHECK(matches("(gemm|cutlass)_(bf16)?x", "cutlass_x"));
  CHECK(matches("(?:ab)+$", "xabab"));
  CHECK_FALSE(matches("(ab)+$", "ababx"));
  CHECK(matches("^sm90", "sm90_xmma"));
  CHECK_FALSE(matches("^sm90", "x_sm90"));
  CHECK(matches("gemm$", "xgemm"));
  CHECK_FALSE(matches("gemm$", "gemmx"));
  CHECK(matches("^$", ""));
  CHECK_FALSE(matches("^$", "x"));
  CHECK(matches("a||b", "zzz"));  // an empty branch matches everywhere
  CHECK(matches("(a*)*b", "aaab"));
  CHECK_FALSE(matches("(a*)*b", "aaaa"));
}

TEST_CASE("patterns: unsupported syntax is rejected with its position") {
  const auto rejects = [](const std::string& pattern, const std::string& what) {
    INFO(pattern);
    CHECK_THROWS_WITH(ess::NamePattern(pattern), Catch::Contains(what));
  };
  rejects("(a)\\1", "backreferences");
  rejects("(?=a)", "lookaround");
  rejects("(?!a)", "lookaround");
  rejects("(?<=a)", "lookaround");
  rejects("a{2,3}", "counted repetition");
  rejects("a}", "counted repetition");
  rejects("\\bgemm", "word boundaries");
  rejects("[[:alpha:]]", "POSIX classes");
  rejects("\\p{L}", "unsupported escape \\p");
  rejects("\\q", "unsupported escape \\q");
  rejects("(", "unmatched '('");
  rejects("a)", "unmatched ')'");
  rejects("[a-", "unterminated character class");
  rejects("[z-a]", "range out of order");
  rejects("a**", "nothing to repeat");
  rejects("*a", "nothing to repeat");
  rejects("a|+", "nothing to repeat");
  rejects("^*", "cannot be repeated");
  rejects("ab\\", "single backslash");
  CHECK_THROWS_WITH(ess::NamePattern("ab{"), Catch::StartsWith("at character 3: "));
  CHECK_THROWS_AS(ess::NamePattern("(?=a)"), ess::PatternError);
}

TEST_CASE("patterns: length and nesting are bounded, the program grows linearly") {
  CHECK_NOTHROW(ess::NamePattern(std::string(ess::kMaxPatternLength, 'x')));
  CHECK_THROWS_WITH(ess::NamePattern(std::string(ess::kMaxPatternLength + 1, 'x')), Catch::Contains("longer than the 1000"));
  const std::string nested_ok = std::string(ess::kMaxPatternGroupDepth, '(') + "a" + std::string(ess::kMaxPatternGroupDepth, ')');
  CHECK(matches(nested_ok, "a"));
  const std::string nested_deep =
      std::string(ess::kMaxPatternGroupDepth + 1, '(') + "a" + std::string(ess::kMaxPatternGroupDepth + 1, ')');
  CHECK_THROWS_WITH(ess::NamePattern(nested_deep), Catch::Contains("nested deeper than 32"));
  // At most two instructions per pattern character plus the final match: (a*)* is 2 splits,
  // 2 jumps, 1 byte test and the match.
  const ess::NamePattern p("(a*)*");
  CHECK(p.size() == 6);
  CHECK(ess::NamePattern(std::string(ess::kMaxPatternLength, 'x')).size() == ess::kMaxPatternLength + 1);
}

TEST_CASE("patterns: catastrophic-backtracking patterns run in one pass over long names") {
  // Each of these takes exponential time in a backtracking matcher (std::regex took over 60 s on
  // names far shorter than these); here a search is a pass over the name.
  const std::string as = std::string(20000, 'a') + "b";
  CHECK_FALSE(matches("(a|aa)+$", as));
  CHECK(matches("(a|aa)+b$", as));
  CHECK_FALSE(matches("(x+x+)+y", std::string(40000, 'x')));
  CHECK_FALSE(matches("((a+)+)+$", std::string(30000, 'a') + "!"));
  CHECK_FALSE(matches(".*.*.*.*.*.*.*.*=.*", std::string(20000, 'q')));
  CHECK(matches("([a-z]+)*[0-9]$", std::string(20000, 'k') + "7"));
}

TEST_CASE("category maps: patterns std::regex overflowed the stack on are refused or matched without recursion") {
  // A 100k-character pattern overflowed std::regex's recursive compiler; it is refused by length.
  CHECK_THROWS_WITH(ess::CategoryMap::parse(one_rule(std::string(100000, 'a')), "m.json"),
                    Catch::Contains("/rules/0/pattern") && Catch::Contains("longer than the 1000"));
  CHECK_THROWS_WITH(ess::CategoryMap::parse(one_rule(std::string(5000, '(') + std::string(5000, ')')), "m.json"),
                    Catch::Contains("/rules/0/pattern"));
  // A ~40k-character kernel name overflowed std::regex_search with the built-in mapping.
  const ess::CategoryMap builtin = ess::CategoryMap::builtin();
  CHECK_FALSE(builtin.category_of(std::string(40000, 'a')).has_value());
  CHECK(*builtin.category_of(std::string(200000, 'x') + "gemm") == "gemm");
  CHECK(*builtin.category_of("void vllm::rms_norm_kernel<" + std::string(60000, 'T') + ">") == "norm");
}

TEST_CASE("category maps: unsupported pattern syntax names the rule's JSON pointer") {
  const nlohmann::json doc = {{"schema", "ess-sim/kernel-categories/v1"},
                              {"rules", {{{"pattern", "norm"}, {"category", "norm"}}, {{"pattern", "(?=x)"}, {"category", "gemm"}}}}};
  CHECK_THROWS_AS(ess::CategoryMap::parse(doc, "m.json"), ess::TraceError);
  CHECK_THROWS_WITH(ess::CategoryMap::parse(doc, "m.json"),
                    Catch::StartsWith("m.json: /rules/1/pattern: unsupported pattern at character 1: lookaround"));
}

TEST_CASE("the shipped kineto-categories.json compiles and maps kernel names to the documented categories") {
  const nlohmann::json doc = nlohmann::json::parse(ess::kDefaultKinetoCategories);
  const ess::CategoryMap map = ess::CategoryMap::builtin();
  REQUIRE(map.size() == doc.at("rules").size());
  for (const auto& rule : doc.at("rules")) {
    INFO(rule.dump());
    CHECK_NOTHROW(ess::NamePattern(rule.at("pattern").get<std::string>()));
  }
  // Names from real vLLM / SGLang / PyTorch traces, with the category each rule's list gives.
  const std::pair<const char*, const char*> expected[] = {
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off", "gemm"},
      {"void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>(Params)", "gemm"},
      {"ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn", "gemm"},
      {"nvjet_tst_128x64_64x8_1x1_v_bz_coopA_TNT", "gemm"},
      {"void deep_gemm::fp8_gemm_kernel<128u, 7168u>", "gemm"},
      {"void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*, c10::BFloat16 const*, float, int, int)", "norm"},
      {"void at::native::vectorized_layer_norm_kernel<float, float>", "norm"},
      {"flash_fwd_splitkv_mla_kernel", "attention"},
      {"void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<576, 64, 64>>", "attention"},
      {"sparse_mla_fwd_kernel", "attention"},
      {"void vllm::paged_attention_v2_kernel<__nv_bfloat16>", "attention"},
      {"fp8_mqa_logits_kernel", "indexer"},
      {"radix_select_topk_kernel", "indexer"},
      {"RadixSelect_kernel", "indexer"},
      {"Memcpy HtoD (Pinned -> Device)", "transfer"},
      {"uva_gather_rows_kernel", "transfer"},
      {"Memcpy DtoH (Device -> Pinned)", "ignore"},
      {"Memset (Device)", "ignore"},
      {"void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel>", "elementwise"},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>", "elementwise"},
      {"void vllm::rotary_embedding_kernel<c10::BFloat16, true>", "elementwise"},
  };
  for (const auto& [name, category] : expected) {
    INFO(name);
    const auto got = map.category_of(name);
    REQUIRE(got.has_value());
    CHECK(*got == category);
  }
  CHECK_FALSE(map.category_of("my_mystery_kernel").has_value());
  // First match wins: an indexer top-k GEMM-like name goes to the indexer (its rule comes first).
  CHECK(*map.category_of("indexer_gemm_kernel") == "indexer");
}
