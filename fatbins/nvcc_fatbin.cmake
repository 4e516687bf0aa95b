# Runs nvcc -fatbin, keeping its -Xptxas -v report in REPORT; on failure prints the report.
execute_process(
  COMMAND ${NVCC} -fatbin ${FLAGS} -o ${OUT} ${SRC}
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err)
file(WRITE ${REPORT} "${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nvcc failed for ${SRC}:\n${out}${err}")
endif()
if(err MATCHES "[1-9][0-9]* bytes spill")
  message(WARNING "spills in ${SRC}: see ${REPORT}")
endif()
