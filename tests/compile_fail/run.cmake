# Compiles unknown_element_type.cpp once per case with the C++ compiler: CASE_CONTROL must
# compile; every other case must fail with its message (dtype_of's static_assert unless the case
# names another) and name its type or function. Discarded results are errors here
# (-Werror=unused-result), so that [[nodiscard]] is checked too.
# Run as: cmake -DCXX=<compiler> -DSOURCE_DIR=<repo> -DCUDA_INCLUDE=<dir> -P run.cmake
set(source ${SOURCE_DIR}/tests/compile_fail/unknown_element_type.cpp)
set(flags -std=c++17 -fsyntax-only -Werror=unused-result -I${SOURCE_DIR}/include)
foreach(dir ${CUDA_INCLUDE})
  list(APPEND flags -I${dir})
endforeach()
set(dtype_message "cujit::dtype_of<T>: T has no cujit dtype")
# case, a regular expression the compiler's output must match besides the message, and the
# message when it is not dtype_of's
set(cases
  "CASE_KERNEL_ARGUMENT_STRING|char|cujit: a kernel argument must be a cujit::Array"
  "CASE_DISCARDED_RESHAPE|reshape|ignoring return value"
  "CASE_DISCARDED_TO_DLPACK|to_dlpack|ignoring return value"
  "CASE_DISCARDED_EXPRESSION|exp|ignoring return value"
  "CASE_DISCARDED_REDUCTION|sum|ignoring return value"
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
  set(message "${dtype_message}")
  list(LENGTH parts count)
  if(count GREATER 2)
    list(GET parts 2 message)
  endif()
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
