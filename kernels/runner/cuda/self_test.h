// ess-runner's start-up check of its own kernels against the CPU references of
// kernels/runner/reference.h, on small cases with random data: rmsnorm, kv_norm's latent row
// store, indexer_score (and its new-key store), indexer_topk, sparse_mla (whole, and DA's two
// parts merged), the gather / copy / write-back transfers, act and sampling. cuBLAS is not checked.
#pragma once

#include <cstdio>

namespace ess::runner::gpu {

// Runs every check on the current device, one line per check on `log`. True if all passed.
bool run_self_test(std::FILE* log);

}  // namespace ess::runner::gpu
