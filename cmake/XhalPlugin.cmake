# xhal_add_plugin(<backend> SOURCES ...)
# Builds libxhal-<backend>.so as a MODULE against the plugin headers only
# (a plugin never links libxhal), exporting just the entry symbol, and
# installs it into <libdir>/xhal/plugins.
set(XHAL_PLUGIN_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/xhal/plugins)
# Plugins linked outside this helper (rocm's hipcc link) pass it themselves.
set(XHAL_PLUGIN_EXPORTS_MAP ${CMAKE_CURRENT_LIST_DIR}/xhal-plugin.map)
set(XHAL_PLUGIN_TARGETS "" CACHE INTERNAL "")

function(xhal_add_plugin backend)
  cmake_parse_arguments(P "" "" "SOURCES" ${ARGN})
  set(target xhal-plugin-${backend})
  add_library(${target} MODULE ${P_SOURCES})
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME "xhal-${backend}"
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LINK_DEPENDS ${XHAL_PLUGIN_EXPORTS_MAP})
  # Hidden visibility is not enough: weak template instantiations and
  # typeinfo from libstdc++ headers stay default. The version script hides
  # everything but the entry symbol (tests/abi checks it).
  target_link_options(${target} PRIVATE
    "LINKER:--version-script=${XHAL_PLUGIN_EXPORTS_MAP}")
  target_link_libraries(${target} PRIVATE xhal::headers)
  install(TARGETS ${target} LIBRARY DESTINATION ${XHAL_PLUGIN_INSTALL_DIR}
          COMPONENT plugins)
  set(XHAL_PLUGIN_TARGETS ${XHAL_PLUGIN_TARGETS} ${target} CACHE INTERNAL "")
endfunction()
