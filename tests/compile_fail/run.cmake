# Compiles unknown_element_type.cpp once per case with the C++ compiler: CASE_CONTROL must
# compile; every other case must fail with dtype_of's static_assert and name its type.
# Run as: cmake -DCXX=<compiler> -DSOURCE_DIR=<repo> -DCUDA_INCLUDE=<dir> -P run.cmake
set(source ${SOURCE_DIR}/tests/compile_fail/unknown_element_type.cpp)
set(flags -std=c++17 -fsyntax-only -I${SOURCE_DIR}/include)
foreach(dir ${CUDA_INCLUDE})
  list(APPEND flags -I${dir})
endforeach()
set(message "cujit::dtype_of<T>: T has no cujit dtype")
# case, then a regular expression the compiler's output must match besides the message
set(cases
  "CASE_FROM_HOST_STRUCT|Pixel"
  "CASE_TO_HOST_LONG_DOUBLE|long double"
  "CASE_SCALAR_LONG_DOUBLE|long double"
  "CASE_FROM_POINTER_WCHAR|wchar_t"
  "CASE_HALF_AFTER_CUJIT|__half")
set(failed "")

execute_process(COMMAND ${CXX} ${flags} -DCASE_CONTROL ${source}
  RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT result EQUAL 0)
  message(SEND_ERROR "CASE_CONTROL does not compile:\n${out}")
  list(APPEND failed CASE_CONTROL)
endif()

foreach(entry ${cases})
  string(REPLACE "|" ";" parts "${entry}")
  list(GET parts 0 case)
  list(GET parts 1 type)
  execute_process(COMMAND ${CXX} ${flags} -D${case} ${source}
    RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE out)
  string(FIND "${out}" "${message}" at)
  if(result EQUAL 0)
    message(SEND_ERROR "${case} compiled; it must not")
    list(APPEND failed ${case})
  elseif(at EQUAL -1 OR NOT out MATCHES "${type}")
    message(SEND_ERROR "${case} failed without the message or the type '${type}':\n${out}")
    list(APPEND failed ${case})
  else()
    message(STATUS "${case}: refused at compile time, naming ${type}")
  endif()
endforeach()
if(failed)
  message(FATAL_ERROR "compile-fail cases wrong: ${failed}")
endif()
