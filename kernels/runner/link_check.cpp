// ess-runner-link-check: links every object of ess_runner_host, the offload sources and
// ess_bench_host (whole archives), so that a source list missing a file fails to link on any
// machine, with or without CUDA (kernels/runner/CMakeLists.txt). It does nothing when run.
int main() { return 0; }
