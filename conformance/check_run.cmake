# Runs xhal-conformance and checks its exit status, its output and, in the
# JSON report, the status and message of chosen tests (crash isolation).
#   cmake -DCOMMAND="a;b" [-DENVIRONMENT="K=V;..."] -DEXPECT_EXIT=N
#         [-DEXPECT_OUTPUT="regex;..."] [-DREPORT=file -DREPORT_CHECK=checker]
#         [-DEXPECT_RESULTS="Suite.Name|status|message-regex;..."]
#         [-DEXPECT_DEVICES="name|verdict|passes;..."] -P check_run.cmake
# EXPECT_DEVICES: the report's device sections, exactly these and in this
# order, each with that verdict and that many passed tests.
file(REMOVE "${REPORT}")
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env ${ENVIRONMENT} ${COMMAND}
  RESULT_VARIABLE exit_code
  OUTPUT_VARIABLE out
  ERROR_VARIABLE out)
message("${out}")
if(NOT exit_code STREQUAL "${EXPECT_EXIT}")
  message(FATAL_ERROR "exit status ${exit_code}, expected ${EXPECT_EXIT}")
endif()
foreach(pattern IN LISTS EXPECT_OUTPUT)
  if(NOT out MATCHES "${pattern}")
    message(FATAL_ERROR "output lacks /${pattern}/")
  endif()
endforeach()
if(NOT REPORT)
  return()
endif()
if(NOT EXISTS "${REPORT}")
  message(FATAL_ERROR "no report written to ${REPORT}")
endif()
if(REPORT_CHECK)
  execute_process(COMMAND ${REPORT_CHECK} ${REPORT} RESULT_VARIABLE check_code)
  if(NOT check_code EQUAL 0)
    message(FATAL_ERROR "the report does not pass ${REPORT_CHECK}")
  endif()
endif()
file(READ "${REPORT}" json)
string(JSON count LENGTH "${json}" results)
foreach(expected IN LISTS EXPECT_RESULTS)
  string(REPLACE "|" ";" parts "${expected}")
  list(GET parts 0 want_test)
  list(GET parts 1 want_status)
  list(GET parts 2 want_message)
  set(found FALSE)
  math(EXPR last "${count} - 1")
  foreach(i RANGE 0 ${last})
    if(i GREATER last)
      break()
    endif()
    string(JSON test GET "${json}" results ${i} test)
    string(JSON status GET "${json}" results ${i} status)
    string(JSON text GET "${json}" results ${i} message)
    if(test STREQUAL want_test AND status STREQUAL want_status AND text MATCHES "${want_message}")
      set(found TRUE)
    endif()
  endforeach()
  if(NOT found)
    message(FATAL_ERROR "the report has no result ${want_test} with status ${want_status} "
                        "and a message matching /${want_message}/")
  endif()
endforeach()

if(EXPECT_DEVICES)
  string(JSON device_count LENGTH "${json}" devices)
  list(LENGTH EXPECT_DEVICES want_count)
  if(NOT device_count EQUAL want_count)
    message(FATAL_ERROR "the report has ${device_count} device sections, expected ${want_count}")
  endif()
  set(i 0)
  foreach(expected IN LISTS EXPECT_DEVICES)
    string(REPLACE "|" ";" parts "${expected}")
    list(GET parts 0 want_name)
    list(GET parts 1 want_verdict)
    list(GET parts 2 want_passes)
    string(JSON name GET "${json}" devices ${i} name)
    string(JSON verdict GET "${json}" devices ${i} verdict)
    string(JSON passes GET "${json}" devices ${i} summary pass)
    if(NOT name STREQUAL want_name OR NOT verdict STREQUAL want_verdict
       OR NOT passes EQUAL want_passes)
      message(FATAL_ERROR "device section ${i} is ${name}, verdict ${verdict}, ${passes} passed; "
                          "expected ${want_name}, verdict ${want_verdict}, ${want_passes} passed")
    endif()
    math(EXPR i "${i} + 1")
  endforeach()
endif()
