# The vendor kit, as a vendor meets it (docs/plugin-guide.md): installs this
# build into a fresh prefix, checks that the plugin SDK is there (CMake
# helper, version script, xhal-plugin.pc, report checker, docs, the example
# plugin, the suite's sources that failure messages cite), builds
# samples/plugin-template out of tree with find_package(xhal) and
# xhal_add_plugin alone, checks the build (one exported symbol, no FMA
# contraction, hidden visibility), then runs the installed xhal-conformance
# on that plugin only, by file path (--plugin <.so>, no expected-failures
# file): exit 0, report accepted by the installed checker,
# and the plugin section says index_select and softmax_forward passed
# bit-exact, every other op unsupported, nothing failed. Last, the same
# plugin built by hand with pkg-config xhal-plugin passes two tests, and the
# installed <xhal/xhal_canonical.h> compiles as C99 with its flags.
# Skipped (exit 77) when the build has no xhal-conformance.
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("${what}:\n${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (exit ${rc})")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run("install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

if(NOT EXISTS ${prefix}/bin/xhal-conformance)
  message("SKIPPED: this build has no xhal-conformance (XHAL_BUILD_CONFORMANCE=OFF)")
  cmake_language(EXIT 77)
endif()
file(GLOB_RECURSE cmake_dir LIST_DIRECTORIES true ${prefix}/*/cmake/xhal/xhalConfig.cmake)
get_filename_component(cmake_dir "${cmake_dir}" DIRECTORY)
file(GLOB_RECURSE plugin_pc ${prefix}/*/pkgconfig/xhal-plugin.pc)
set(doc ${prefix}/share/doc/xhal)
foreach(file ${cmake_dir}/XhalPlugin.cmake ${cmake_dir}/xhal-plugin.map ${plugin_pc}
             ${prefix}/bin/xhal-conformance-report-check ${prefix}/include/xhal/xhal_plugin.h
             ${prefix}/include/xhal/xhal_canonical.h ${doc}/report.schema.json ${doc}/vendors.md
             ${doc}/plugin-guide.md ${doc}/conformance.md ${doc}/abi.md ${doc}/semantics.md
             ${doc}/examples/plugin-template/CMakeLists.txt
             ${doc}/examples/plugin-template/acme_plugin.c
             ${doc}/conformance/tests/softmax_test.cpp ${doc}/conformance/harness.h)
  if(NOT EXISTS "${file}")
    message(FATAL_ERROR "the install tree lacks ${file}")
  endif()
endforeach()
# The installed example is the sample this test builds.
foreach(name CMakeLists.txt acme_plugin.c)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files
                  ${SOURCE_DIR}/samples/plugin-template/${name} ${doc}/examples/plugin-template/${name}
                  RESULT_VARIABLE differ)
  if(differ)
    message(FATAL_ERROR "the installed example ${name} differs from samples/plugin-template")
  endif()
endforeach()

# 1. CMake: find_package(xhal) and xhal_add_plugin, nothing else.
set(build ${WORK_DIR}/acme)
run("configure samples/plugin-template" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/samples/plugin-template
    -B ${build} -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_C_COMPILER=${C_COMPILER}
    -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)
run("build samples/plugin-template" ${CMAKE_COMMAND} --build ${build})
set(plugin ${build}/libxhal-acme.so)
if(NOT EXISTS ${plugin})
  message(FATAL_ERROR "the build made no ${plugin}")
endif()
file(READ ${build}/compile_commands.json commands)
foreach(flag -ffp-contract=off -fvisibility=hidden)
  if(NOT commands MATCHES "${flag}")
    message(FATAL_ERROR "the plugin was compiled without ${flag}:\n${commands}")
  endif()
endforeach()
run("nm -D --defined-only" ${NM} -D --defined-only ${plugin})
string(REGEX MATCHALL "[^\n]+" symbols "${last_output}")
foreach(line IN LISTS symbols)
  if(NOT line MATCHES " xhal_plugin_get_api$")
    message(FATAL_ERROR "the plugin exports more than xhal_plugin_get_api: ${line}")
  endif()
endforeach()
run("ldd" ldd ${plugin})
if(last_output MATCHES "libxhal\\.so")
  message(FATAL_ERROR "the plugin links libxhal")
endif()

# 2. The installed suite on this plugin alone, named by its file path
#    (--plugin: no other plugin is loaded, no XHAL_PLUGIN_PATH or
#    XHAL_DEVICE needed; docs/vendors.md); no expected-failures file.
set(report ${WORK_DIR}/acme.json)
execute_process(COMMAND ${CMAKE_COMMAND}
  "-DCOMMAND=${prefix}/bin/xhal-conformance;--plugin;${plugin};--report;${report}"
  "-DENVIRONMENT=XHAL_PLUGIN_PATH=;ASAN_OPTIONS=handle_segv=0"
  -DEXPECT_EXIT=0
  "-DEXPECT_OUTPUT=plugin acme +loaded +${build}/libxhal-acme.so;xhal-conformance: PASSED"
  -DREPORT=${report}
  -DREPORT_CHECK=${prefix}/bin/xhal-conformance-report-check
  "-DEXPECT_PLUGIN=acme|pass|index_select=bit-exact,softmax_forward=bit-exact"
  -P ${SOURCE_DIR}/conformance/check_run.cmake
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the conformance run on the out-of-tree plugin did not give the expected "
                      "report (see above)")
endif()
# The report against the installed JSON Schema (needs python3-jsonschema).
if(PYTHON3)
  run("report against the installed schema" ${PYTHON3}
      ${SOURCE_DIR}/scripts/check-report-schema.py --schema ${doc}/report.schema.json ${report})
endif()

# 3. pkg-config xhal-plugin, by hand: flags without -lxhal, a plugin that loads.
if(NOT PKG_CONFIG)
  message(FATAL_ERROR "pkg-config not found")
endif()
get_filename_component(pc_dir ${plugin_pc} DIRECTORY)
execute_process(COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pc_dir}
                ${PKG_CONFIG} --cflags --libs xhal-plugin
                RESULT_VARIABLE rc OUTPUT_VARIABLE flags ERROR_VARIABLE flags
                OUTPUT_STRIP_TRAILING_WHITESPACE)
message("pkg-config --cflags --libs xhal-plugin: ${flags}")
if(NOT rc EQUAL 0 OR flags MATCHES "-lxhal" OR NOT flags MATCHES "-ffp-contract=off"
   OR NOT flags MATCHES "-fvisibility=hidden" OR NOT flags MATCHES "--version-script=")
  message(FATAL_ERROR "xhal-plugin.pc: want include, -ffp-contract=off, -fvisibility=hidden "
                      "and the version script, no -lxhal; got: ${flags}")
endif()
separate_arguments(flag_list UNIX_COMMAND "${flags}")
file(MAKE_DIRECTORY ${WORK_DIR}/pc)
run("cc acme_plugin.c (pkg-config)" ${C_COMPILER} -std=c11 -shared
    ${SOURCE_DIR}/samples/plugin-template/acme_plugin.c ${flag_list}
    -o ${WORK_DIR}/pc/libxhal-acme.so)
# The installed canonical reference header compiles as C99 with those flags.
file(WRITE ${WORK_DIR}/pc/canonical.c
     "#include <xhal/xhal_canonical.h>\nfloat f(float x) { return xhal_canon_exp(x); }\n")
run("cc canonical.c (pkg-config)" ${C_COMPILER} -std=c99 -pedantic-errors -c
    ${WORK_DIR}/pc/canonical.c ${flag_list} -o ${WORK_DIR}/pc/canonical.o)
run("xhal-conformance --plugin (pkg-config build)" ${CMAKE_COMMAND} -E env
    ASAN_OPTIONS=handle_segv=0 ${prefix}/bin/xhal-conformance
    --plugin ${WORK_DIR}/pc/libxhal-acme.so --require-bit-exact
    --gtest_filter=SoftmaxTest.ForwardRandomRows:IndexSelectTest.RepeatedIndicesEveryDtype)
if(NOT last_output MATCHES "summary: pass=2\n" OR NOT last_output MATCHES "PASSED")
  message(FATAL_ERROR "the pkg-config build did not pass its two tests")
endif()
