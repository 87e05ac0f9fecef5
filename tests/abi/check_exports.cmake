# cmake -DNM=nm -DLIBXHAL=<path> -DSOVERSION=<x.y> -P check_exports.cmake
#
# Fails when libxhal exports a symbol not named xhal_*, an xhal_* symbol
# without a version node of its SONAME series (XHAL_<SOVERSION>[.<n>]), or
# when any plugin beside libxhal (the folder the loader searches last)
# exports anything but xhal_plugin_get_api.
cmake_minimum_required(VERSION 3.25)
foreach(v NM LIBXHAL SOVERSION)
  if("${${v}}" STREQUAL "")
    message(FATAL_ERROR "check_exports.cmake: -D${v}=... is required")
  endif()
endforeach()

# Prints "<name>[@[@]<version>]" per defined dynamic symbol into out_var.
function(dynamic_exports lib out_var)
  execute_process(COMMAND ${NM} -D --defined-only --format=posix ${lib}
    OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} failed on ${lib}: ${err}")
  endif()
  string(REGEX REPLACE "\n$" "" out "${out}")
  string(REPLACE "\n" ";" lines "${out}")
  set(syms)
  foreach(line IN LISTS lines)
    # posix format: "<name> <type> <value> [<size>]"
    string(REGEX MATCH "^[^ ]+ [A-Za-z]" head "${line}")
    list(APPEND syms "${head}")
  endforeach()
  set(${out_var} "${syms}" PARENT_SCOPE)
endfunction()

set(failures)

# libxhal: the node of this SONAME series, e.g. XHAL_0.1 (or XHAL_0.1.2 for
# symbols a patch release added). The node names appear as absolute symbols.
string(REPLACE "." "\\." series "${SOVERSION}")
set(node "XHAL_${series}(\\.[0-9]+)?")
dynamic_exports(${LIBXHAL} syms)
set(count 0)
foreach(s IN LISTS syms)
  if(s MATCHES "^${node} A$")
    continue()   # a version definition
  elseif(s MATCHES "^xhal_[A-Za-z0-9_]+@@?${node} [A-Za-z]$")
    math(EXPR count "${count} + 1")
  else()
    list(APPEND failures "${LIBXHAL}: unexpected export '${s}' (want xhal_*@@XHAL_${SOVERSION}[.n])")
  endif()
endforeach()
if(count EQUAL 0)
  list(APPEND failures "${LIBXHAL}: no xhal_* symbol versioned XHAL_${SOVERSION}[.n]")
else()
  message(STATUS "${LIBXHAL}: ${count} xhal_* symbols versioned XHAL_${SOVERSION}[.n]")
endif()

get_filename_component(dir ${LIBXHAL} DIRECTORY)
file(GLOB plugins ${dir}/libxhal-*.so)
if(NOT plugins)
  list(APPEND failures "no libxhal-*.so plugin in ${dir}")
endif()
foreach(p IN LISTS plugins)
  dynamic_exports(${p} syms)
  set(extra ${syms})
  list(REMOVE_ITEM extra "xhal_plugin_get_api T")
  list(LENGTH extra n)
  if(n GREATER 0 OR NOT "xhal_plugin_get_api T" IN_LIST syms)
    list(JOIN extra ", " shown)
    list(APPEND failures "${p}: must export only xhal_plugin_get_api; also exports ${n}: ${shown}")
  else()
    message(STATUS "${p}: xhal_plugin_get_api only")
  endif()
endforeach()

if(failures)
  list(JOIN failures "\n  " text)
  message(FATAL_ERROR "exported symbols:\n  ${text}")
endif()
