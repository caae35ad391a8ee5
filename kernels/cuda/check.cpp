#include "kernels/cuda/check.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace ess::bench {

namespace {

FatalHook g_fatal_hook = nullptr;  // one per process: die() is process-wide by nature

}  // namespace

void set_fatal_hook(FatalHook hook) { g_fatal_hook = hook; }

void die(const char* file, int line, const char* call, const char* error) {
  const std::string message = std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " + error;
  std::fprintf(stderr, "ess-bench: %s\n", message.c_str());
  std::fflush(stderr);
  // The hook runs once: if writing the checkpoint itself failed through die(), exit at once.
  if (FatalHook hook = g_fatal_hook) {
    g_fatal_hook = nullptr;
    hook(message.c_str());
  }
  std::exit(1);
}

}  // namespace ess::bench
