# Fails when a test case name of the Catch2 binary BIN holds a ';'. CMake splits lists on it, so
# catch_discover_tests registers such a case as two CTest tests whose filters match nothing: each
# "passes" without running a line of the case (21 cases went unrun that way until 2026-12-06).
#   cmake -DBIN=path/to/ess_AREA_tests -P check_test_names.cmake
if(NOT BIN)
  message(FATAL_ERROR "check_test_names: pass -DBIN=<test binary>")
endif()
execute_process(COMMAND "${BIN}" --list-test-names-only OUTPUT_VARIABLE names ERROR_VARIABLE err)
if(names STREQUAL "")
  message(FATAL_ERROR "check_test_names: ${BIN} listed no test case (${err})")
endif()
string(REPLACE ";" "<semicolon>" marked "${names}")
string(REGEX MATCHALL "[^\n]*<semicolon>[^\n]*" bad "${marked}")
if(bad)
  string(REPLACE ";" "\n  " bad "${bad}")
  message(FATAL_ERROR "check_test_names: these test names hold a ';', which CTest splits into tests that run nothing; "
                      "write ',' instead:\n  ${bad}")
endif()
