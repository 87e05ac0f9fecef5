# ctest sample.standalone (samples/CMakeLists.txt): installs this build into
# a fresh prefix, then configures, builds and runs each sample folder on its
# own against it, as an app would (find_package(xhal) through
# CMAKE_PREFIX_PATH, no XHAL_PLUGIN_PATH: the installed runtime finds the
# installed cpu plugin), and compares each digest with <name>/digest.txt.
# Skipped when the cpu plugin is not part of the build.
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (exit ${rc}):\n${out}")
  endif()
  string(STRIP "${out}" out)
  string(REGEX MATCH "[^\n]*$" last "${out}")
  message("${what}: ok (${last})")
endfunction()

# A sanitized libxhal needs its runtime first in the program: the samples are
# then built with the same -fsanitize flags, as an app would be.
set(san_flags "")
if(SANITIZE)
  set(san_flags -fsanitize=${SANITIZE})
endif()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run("install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
file(GLOB_RECURSE cpu_plugin ${prefix}/*/xhal/plugins/libxhal-cpu.so)
if(NOT cpu_plugin)
  message("SKIPPED: the cpu plugin is not installed (not built)")
  return()  # the test's SKIP_REGULAR_EXPRESSION sees the line
endif()

foreach(sample gnn river norm-block)
  run("configure ${sample}" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/samples/${sample}
      -B ${WORK_DIR}/${sample} -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release
      -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
      "-DCMAKE_CXX_FLAGS=${san_flags}" "-DCMAKE_EXE_LINKER_FLAGS=${san_flags}")
  run("build ${sample}" ${CMAKE_COMMAND} --build ${WORK_DIR}/${sample})
  run("run ${sample}" ${CMAKE_COMMAND} -E env --unset=XHAL_PLUGIN_PATH XHAL_DEVICE=cpu
      ${CMAKE_COMMAND} -DPROGRAM=${WORK_DIR}/${sample}/xhal-${sample}
      -DDIGEST_FILE=${SOURCE_DIR}/samples/${sample}/digest.txt
      -P ${SOURCE_DIR}/samples/check_digest.cmake)
endforeach()
