# The sources of ess_io, named once (see sim/offload/sources.cmake for why): checksums, atomic
# writes, whole-file reads, Chrome traces, child processes. Paths are relative to this folder.
set(ESS_IO_SOURCES sha256.cpp atomic_file.cpp child_process.cpp chrome_trace.cpp read_file.cpp)
list(TRANSFORM ESS_IO_SOURCES PREPEND ${CMAKE_CURRENT_LIST_DIR}/)
