#include "kernels/cuda/check.h"

#include <cstdio>
#include <cstdlib>

namespace ess::bench {

void die(const char* file, int line, const char* call, const char* error) {
  std::fprintf(stderr, "ess-bench: %s:%d: %s failed: %s\n", file, line, call, error);
  std::fflush(stderr);
  std::exit(1);
}

}  // namespace ess::bench
