# The sources of ess_offload, named once: sim/offload/CMakeLists.txt builds the library from them,
# and kernels/runner/CMakeLists.txt compiles the same list when kernels/ is built on its own (a GPU
# machine has no SimGrid to build sim/ with). Paths are relative to this folder. The learned
# predictor's offline training (heat_training.cpp, Eigen) is its own library, ess_offload_training:
# the runner does not train, and a GPU machine has no Eigen.
set(ESS_OFFLOAD_SOURCES
  access_registry.cpp
  access_trace.cpp
  cache_sim.cpp
  eviction.cpp
  eviction_fifo.cpp
  eviction_heat.cpp
  eviction_lru.cpp
  eviction_queue.cpp
  eviction_registry.cpp
  gpu_pool.cpp
  heat_model.cpp
  overlap_auto.cpp
  overlap_da.cpp
  overlap_dba.cpp
  overlap_registry.cpp
  overlap_serial.cpp
  policy_params.cpp
  predictor_adversarial.cpp
  predictor_hot_window.cpp
  predictor_learned.cpp
  predictor_oracle.cpp
  predictor_previous_layer.cpp
  prefetch_layer_ahead.cpp
  prefetch_on_demand.cpp
  prefetch_registry.cpp
  prefetch_tiered.cpp
  replay_demand.cpp
  synthetic_access.cpp
)
list(TRANSFORM ESS_OFFLOAD_SOURCES PREPEND ${CMAKE_CURRENT_LIST_DIR}/)
