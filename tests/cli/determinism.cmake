# Runs a scenario twice in two processes and requires byte-identical results.json and trace.json.
# -DEXE=path/to/ess-sim -DSCENARIO=file.json -DWORK=scratch-dir [-DSTEPS=n]
file(REMOVE_RECURSE "${WORK}")
foreach(i 1 2)
  execute_process(COMMAND "${EXE}" run "${SCENARIO}" -o "${WORK}/run${i}" --steps ${STEPS}
                  RESULT_VARIABLE code OUTPUT_QUIET ERROR_VARIABLE err)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "run ${i} exited ${code}: ${err}")
  endif()
endforeach()
foreach(f results.json trace.json)
  file(SHA256 "${WORK}/run1/${f}" a)
  file(SHA256 "${WORK}/run2/${f}" b)
  if(NOT a STREQUAL b)
    message(FATAL_ERROR "${f} differs between two runs of the same scenario and seed")
  endif()
  message(STATUS "${f}: identical (${a})")
endforeach()
