# See CMakeLists.txt. Every step fails the test with the output it printed.
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("${what}:\n${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (exit ${rc})")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

# A sanitized libxhal needs its runtime first in the program: the sample is
# then built with the same -fsanitize flags, as an app would be.
set(san_flags "")
if(SANITIZE)
  set(san_flags -fsanitize=${SANITIZE})
endif()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run("install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

file(GLOB_RECURSE cpu_plugin ${prefix}/*/xhal/plugins/libxhal-cpu.so)
file(GLOB_RECURSE libxhal ${prefix}/*/libxhal.so)
file(GLOB_RECURSE config ${prefix}/*/cmake/xhal/xhalConfig.cmake)
file(GLOB_RECURSE pc ${prefix}/*/pkgconfig/xhal.pc)
foreach(thing libxhal config pc)
  if(NOT ${thing})
    message(FATAL_ERROR "the install tree lacks ${thing}")
  endif()
endforeach()
foreach(header xhal.h xhal_plugin.h runtime.h buffer.h)
  if(NOT EXISTS ${prefix}/include/xhal/${header})
    message(FATAL_ERROR "the install tree lacks include/xhal/${header}")
  endif()
endforeach()
if(NOT EXISTS ${prefix}/bin/xhal-info)
  message(FATAL_ERROR "the install tree lacks bin/xhal-info")
endif()
if(NOT cpu_plugin)
  message("SKIPPED: the cpu plugin is not installed (not built)")
  cmake_language(EXIT 77)
endif()

# The installed runtime finds its plugins by itself: no XHAL_PLUGIN_PATH.
set(clean_env ${CMAKE_COMMAND} -E env --unset=XHAL_PLUGIN_PATH XHAL_DEVICE=cpu)
run("xhal-info" ${clean_env} ${prefix}/bin/xhal-info)
if(NOT last_output MATCHES "\\[loaded\\] cpu  ${prefix}")
  message(FATAL_ERROR "installed xhal-info did not load the installed cpu plugin")
endif()

# 1. find_package(xhal), standalone.
run("configure hello" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/samples/hello -B ${WORK_DIR}/hello
    -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_C_COMPILER=${C_COMPILER}
    "-DCMAKE_C_FLAGS=${san_flags}" "-DCMAKE_EXE_LINKER_FLAGS=${san_flags}")
run("build hello" ${CMAKE_COMMAND} --build ${WORK_DIR}/hello)
run("run hello" ${clean_env} ${WORK_DIR}/hello/xhal-hello)
if(NOT last_output MATCHES "device: cpu:0" OR NOT last_output MATCHES "all equal")
  message(FATAL_ERROR "hello did not report the cpu device and a good round trip")
endif()

# 2. pkg-config, by hand.
if(NOT PKG_CONFIG)
  message(FATAL_ERROR "pkg-config not found")
endif()
get_filename_component(pc_dir ${pc} DIRECTORY)
execute_process(COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pc_dir}
                ${PKG_CONFIG} --cflags --libs xhal
                RESULT_VARIABLE rc OUTPUT_VARIABLE flags ERROR_VARIABLE flags
                OUTPUT_STRIP_TRAILING_WHITESPACE)
message("pkg-config --cflags --libs xhal: ${flags}")
if(NOT rc EQUAL 0 OR NOT flags MATCHES "-lxhal")
  message(FATAL_ERROR "pkg-config failed: ${flags}")
endif()
separate_arguments(flag_list UNIX_COMMAND "${flags}")
get_filename_component(libdir ${libxhal} DIRECTORY)
run("cc hello.c" ${C_COMPILER} -std=c11 ${san_flags} ${SOURCE_DIR}/samples/hello/hello.c ${flag_list}
    -Wl,-rpath,${libdir} -o ${WORK_DIR}/hello-pc)
run("run hello (pkg-config build)" ${clean_env} ${WORK_DIR}/hello-pc)
