# Plants errors in a good conformance report and checks that
# xhal-conformance-report-check rejects each one (and accepts the report as
# it is). The report comes from a run on a plugin with a subset of the ops
# (conformance.runner.subset_plugin), so it has passed and unsupported ops.
#   cmake -DREPORT=<good report> -DREPORT_CHECK=<checker> -DWORK_DIR=<dir> -P report_plants.cmake
file(READ "${REPORT}" good)
file(MAKE_DIRECTORY "${WORK_DIR}")

function(expect_check name json want_ok)
  set(file "${WORK_DIR}/${name}.json")
  file(WRITE "${file}" "${json}")
  execute_process(COMMAND ${REPORT_CHECK} ${file} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE out)
  if(want_ok AND NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}: the checker rejects the report as written:\n${out}")
  elseif(NOT want_ok AND rc EQUAL 0)
    message(FATAL_ERROR "${name}: the checker accepts a report with a planted error:\n${out}")
  endif()
  message("${name}: ${out}")
endfunction()

expect_check(as_written "${good}" TRUE)

# A missing op called failed, on the device and in the plugin section.
string(JSON planted SET "${good}" devices 0 op_verdicts spmv "{\"verdict\": \"fail\"}")
expect_check(device_missing_op_failed "${planted}" FALSE)
string(JSON planted SET "${good}" plugins 0 ops fail "[\"spmv\"]")
expect_check(plugin_missing_op_failed "${planted}" FALSE)
# A missing op left out of the plugin's lists.
string(JSON planted SET "${good}" plugins 0 ops unsupported "[]")
expect_check(plugin_forgets_missing_ops "${planted}" FALSE)
# A passed op with another level than its tests showed.
string(JSON planted SET "${good}" devices 0 op_verdicts softmax_forward
       "{\"verdict\": \"pass\", \"level\": \"accurate\"}")
expect_check(device_wrong_level "${planted}" FALSE)
string(JSON planted SET "${good}" plugins 0 ops pass softmax_forward "\"accurate\"")
expect_check(plugin_wrong_level "${planted}" FALSE)
# A plugin verdict its devices do not give; a report without plugins.
string(JSON planted SET "${good}" plugins 0 verdict "\"fail\"")
expect_check(plugin_wrong_verdict "${planted}" FALSE)
string(JSON planted REMOVE "${good}" plugins)
expect_check(no_plugin_section "${planted}" FALSE)
# A device whose op verdicts are missing.
string(JSON planted REMOVE "${good}" devices 0 op_verdicts)
expect_check(no_op_verdicts "${planted}" FALSE)
