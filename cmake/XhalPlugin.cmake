# xhal_add_plugin(<backend> SOURCES <file>...
#                 [OUTPUT_DIRECTORY <dir>] [INSTALL_DIR <dir>] [NO_INSTALL])
#
# Builds libxhal-<backend>.so, an xhal backend plugin, as a MODULE against the
# plugin headers only (a plugin never links libxhal), with what the plugin
# contract needs from the build (docs/plugin-guide.md, "Build"):
#   - the file name libxhal-<backend>.so (the loader derives the backend from it);
#   - hidden visibility and a version script that exports xhal_plugin_get_api
#     alone (docs/abi.md "Exported symbols");
#   - -ffp-contract=off for C and C++ (no a*b+c contracted into an FMA:
#     docs/semantics.md section 1). CUDA and HIP sources add their own
#     (--fmad=false -ftz=false -prec-div=true -prec-sqrt=true; plugins/cuda);
#   - installation into <INSTALL_DIR> (default <libdir>/xhal/plugins of the
#     project's prefix, the folder libxhal searches when the prefix is
#     xhal's own; xhal_PLUGIN_DIR names xhal's). NO_INSTALL: none.
# The target is named xhal-plugin-<backend>.
#
# The same file serves xhal's own build (cmake/) and the installed package
# (<libdir>/cmake/xhal/, included by find_package(xhal)); the version script
# xhal-plugin.map lies beside it in both.
include(GNUInstallDirs)
set(XHAL_PLUGIN_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/xhal/plugins)
# Plugins linked outside this helper (rocm's hipcc link) pass it themselves.
set(XHAL_PLUGIN_EXPORTS_MAP ${CMAKE_CURRENT_LIST_DIR}/xhal-plugin.map)
set(XHAL_PLUGIN_TARGETS "" CACHE INTERNAL "")

function(xhal_add_plugin backend)
  cmake_parse_arguments(P "NO_INSTALL" "OUTPUT_DIRECTORY;INSTALL_DIR" "SOURCES" ${ARGN})
  if(NOT backend MATCHES "^[A-Za-z0-9_-]+$")
    message(FATAL_ERROR "xhal_add_plugin: backend '${backend}' may hold letters, digits, '_' "
                        "and '-' only (it becomes libxhal-${backend}.so)")
  endif()
  if(NOT P_SOURCES)
    message(FATAL_ERROR "xhal_add_plugin(${backend}): no SOURCES")
  endif()
  set(target xhal-plugin-${backend})
  add_library(${target} MODULE ${P_SOURCES})
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME "xhal-${backend}"
    SUFFIX ".so"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LINK_DEPENDS ${XHAL_PLUGIN_EXPORTS_MAP})
  if(P_OUTPUT_DIRECTORY)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${P_OUTPUT_DIRECTORY})
  endif()
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:C,CXX>:-ffp-contract=off>)
  # Hidden visibility is not enough: weak template instantiations and
  # typeinfo from libstdc++ headers stay default. The version script hides
  # everything but the entry symbol (tests/abi checks it).
  target_link_options(${target} PRIVATE
    "LINKER:--version-script=${XHAL_PLUGIN_EXPORTS_MAP}")
  target_link_libraries(${target} PRIVATE xhal::headers)
  if(NOT P_NO_INSTALL)
    if(NOT P_INSTALL_DIR)
      set(P_INSTALL_DIR ${XHAL_PLUGIN_INSTALL_DIR})
    endif()
    install(TARGETS ${target} LIBRARY DESTINATION ${P_INSTALL_DIR} COMPONENT plugins)
  endif()
  set(XHAL_PLUGIN_TARGETS ${XHAL_PLUGIN_TARGETS} ${target} CACHE INTERNAL "")
endfunction()
