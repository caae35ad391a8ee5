# Runs a serving scenario twice in two processes and requires byte-identical results.json.
# -DEXE=path/to/ess-sim -DSCENARIO=file.json -DWORK=scratch-dir
file(REMOVE_RECURSE "${WORK}")
foreach(i 1 2)
  execute_process(COMMAND "${EXE}" run "${SCENARIO}" -o "${WORK}/run${i}"
                  RESULT_VARIABLE code OUTPUT_QUIET ERROR_VARIABLE err)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "run ${i} exited ${code}: ${err}")
  endif()
endforeach()
file(SHA256 "${WORK}/run1/results.json" a)
file(SHA256 "${WORK}/run2/results.json" b)
if(NOT a STREQUAL b)
  message(FATAL_ERROR "results.json differs between two runs of the same serving scenario and seed")
endif()
message(STATUS "results.json: identical (${a})")
