// libFuzzer target for kernel-category maps and their patterns: any input must either load or
// raise TraceError, and a loaded map must classify names (here: a few fixed ones and the input
// itself as a kernel name) without crashing. Anything else is a bug.
//
//   CXX=clang++-14 cmake -S . -B build/fuzz -G Ninja -DESS_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
//   cmake --build build/fuzz --target categories_fuzz
//   build/fuzz/tests/categories_fuzz -max_total_time=60 build/fuzz/corpus-categories tests/fuzz/corpus/categories
// fuzz links: ess_validate  (tests/CMakeLists.txt links only these: a smaller fuzz build)
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "validate/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const ess::CategoryMap map = ess::CategoryMap::parse_text(text, "fuzz-input");
    for (const std::string_view name : {"sm90_xmma_gemm_bf16bf16_bf16f32", "void vllm::rms_norm_kernel<c10::BFloat16>",
                                        "Memcpy HtoD (Pinned -> Device)", "", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab"}) {
      (void)map.category_of(name);
    }
    (void)map.category_of(text);
  } catch (const ess::TraceError&) {
    // Bad input, reported properly.
  }
  // The input as a single pattern, so the fuzzer reaches the pattern parser directly.
  try {
    const ess::NamePattern pattern(text.substr(0, size / 2));
    (void)pattern.search(text.substr(size / 2));
  } catch (const ess::PatternError&) {
  }
  return 0;
}
