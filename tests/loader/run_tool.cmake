# Runs a tool and checks its exit status and output (stdout + stderr).
#   cmake -DCOMMAND="a;b" [-DENVIRONMENT="K=V;K2=V2"] -DEXPECT_EXIT=N
#         -DEXPECT_OUTPUT="regex1;regex2" [-DREJECT_OUTPUT="regex;..."] -P run_tool.cmake
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
foreach(pattern IN LISTS REJECT_OUTPUT)
  if(out MATCHES "${pattern}")
    message(FATAL_ERROR "output has /${pattern}/: ${CMAKE_MATCH_0}")
  endif()
endforeach()
