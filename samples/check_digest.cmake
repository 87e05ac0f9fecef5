# Runs PROGRAM (with ARGS, a ;-list) and checks its output (samples/CMakeLists.txt).
#   DIGEST_FILE: the run must exit 0 and its last line must be
#                `digest <hex>` equal to the file's `digest <hex>` line.
#   SKIP_WITHOUT_DEVICE: a run that finds no device (XHAL_NOT_FOUND) prints
#                `SKIPPED: ...` (the test skips on it) instead of failing.
#   EXPECT_ERROR: a status name; the run must exit non-zero and print
#                `xhal error <status>: <message>` on stderr.
execute_process(COMMAND ${PROGRAM} ${ARGS} RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(EXPECT_ERROR)
  if(rc EQUAL 0 OR NOT err MATCHES "xhal error ${EXPECT_ERROR}: [^\n]")
    message(FATAL_ERROR "expected a non-zero exit and `xhal error ${EXPECT_ERROR}: "
                        "<message>`, got exit ${rc}")
  endif()
  return()
endif()
if(SKIP_WITHOUT_DEVICE AND NOT rc EQUAL 0 AND err MATCHES "xhal error XHAL_NOT_FOUND: ")
  message("SKIPPED: no device matches XHAL_DEVICE=$ENV{XHAL_DEVICE}")
  return()  # the test's SKIP_REGULAR_EXPRESSION sees the line
endif()
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} failed (exit ${rc})")
endif()
string(STRIP "${out}" out)
string(REGEX MATCH "[^\n]*$" last "${out}")
file(STRINGS ${DIGEST_FILE} recorded REGEX "^digest [0-9a-f]+$")
if(NOT last MATCHES "^digest [0-9a-f]+$")
  message(FATAL_ERROR "the last line is not `digest <hex>`: '${last}'")
endif()
if(NOT last STREQUAL recorded)
  message(FATAL_ERROR "digest mismatch: printed '${last}', recorded in ${DIGEST_FILE}: "
                      "'${recorded}'. On cpu this is a change of results: a bug, or a "
                      "deliberate change of the spec (then regenerate, samples/README.md).")
endif()
message("digest matches ${DIGEST_FILE}")
