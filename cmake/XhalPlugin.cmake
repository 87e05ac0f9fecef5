# xhal_add_plugin(<backend> SOURCES ...)
# Builds libxhal-<backend>.so as a MODULE against the plugin headers only
# (a plugin never links libxhal), exporting just the entry symbol, and
# installs it into <libdir>/xhal/plugins.
set(XHAL_PLUGIN_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/xhal/plugins)
set(XHAL_PLUGIN_TARGETS "" CACHE INTERNAL "")

function(xhal_add_plugin backend)
  cmake_parse_arguments(P "" "" "SOURCES" ${ARGN})
  set(target xhal-plugin-${backend})
  add_library(${target} MODULE ${P_SOURCES})
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME "xhal-${backend}"
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(${target} PRIVATE xhal::headers)
  install(TARGETS ${target} LIBRARY DESTINATION ${XHAL_PLUGIN_INSTALL_DIR}
          COMPONENT plugins)
  set(XHAL_PLUGIN_TARGETS ${XHAL_PLUGIN_TARGETS} ${target} CACHE INTERNAL "")
endfunction()
