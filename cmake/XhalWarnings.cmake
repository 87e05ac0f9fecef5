# Compiler warnings for the project's own C and C++ code (issue 10):
# -Wall -Wextra with gcc and clang, and -Werror when XHAL_WERROR is ON.
# Directory-level options, so every target defined after the include gets
# them. CUDA sources get the same flags for their host code only
# (-Xcompiler); nvcc's device-side diagnostics are left as they are.
option(XHAL_WERROR "Treat compiler warnings as errors (-Werror)" OFF)

set(XHAL_WARNING_FLAGS -Wall -Wextra)
if(XHAL_WERROR)
  list(APPEND XHAL_WARNING_FLAGS -Werror)
endif()
add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${XHAL_WARNING_FLAGS}>")
list(JOIN XHAL_WARNING_FLAGS "," _xhal_host_warnings)
add_compile_options("$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=${_xhal_host_warnings}>")
unset(_xhal_host_warnings)
