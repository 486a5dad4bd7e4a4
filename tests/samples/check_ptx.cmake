# Checks a sample's PTX against what the machine runs:
#  - integer-only: no floating-point type (.f16/.f32/.f64) in the launched
#    kernels; with FLOAT=ON (the float_* samples), no bf16 (sm_75 code has
#    none; docs/isa.md section 11 runs it from sm_80 code), and some floating
#    point;
#  - static shared memory (all .shared arrays of the module) within 2 KiB.
#   cmake -DPTX=<file.ptx> [-DENTRY=<mangled kernel name>] [-DFLOAT=ON] -P check_ptx.cmake
# With ENTRY, only that kernel's body is checked for floating point (for a
# module that also holds float kernels it never launches).
if(NOT EXISTS "${PTX}")
  message(FATAL_ERROR "no PTX file ${PTX}; build the samples first")
endif()
file(READ "${PTX}" module)

set(code "${module}")
if(ENTRY)
  string(FIND "${code}" ".entry ${ENTRY}(" start)
  if(start EQUAL -1)
    message(FATAL_ERROR "${PTX}: no .entry ${ENTRY}")
  endif()
  string(SUBSTRING "${code}" ${start} -1 code)
  string(FIND "${code}" "\n}\n" end)
  string(SUBSTRING "${code}" 0 ${end} code)
endif()
if(FLOAT)
  string(REGEX MATCH "[^\n]*\\.bf16[^\n]*" hit "${code}")
  if(hit)
    string(STRIP "${hit}" hit)
    message(FATAL_ERROR "${PTX}: bf16 in a float sample built for sm_75: ${hit}")
  endif()
  if(NOT code MATCHES "\\.f(16|32|64)")
    message(FATAL_ERROR "${PTX}: a float sample without floating-point PTX")
  endif()
else()
  string(REGEX MATCH "[^\n]*\\.f(16|32|64)[^\n]*" hit "${code}")
  if(hit)
    string(STRIP "${hit}" hit)
    message(FATAL_ERROR "${PTX}: floating-point PTX in an integer sample: ${hit}")
  endif()
endif()

set(shared_bytes 0)
string(REGEX MATCHALL "\\.shared[^\n;]*\\.b8 [A-Za-z0-9_$]+\\[[0-9]+\\]" arrays "${module}")
foreach(array ${arrays})
  string(REGEX REPLACE ".*\\[([0-9]+)\\]$" "\\1" bytes "${array}")
  math(EXPR shared_bytes "${shared_bytes} + ${bytes}")
endforeach()
if(shared_bytes GREATER 2048)
  message(FATAL_ERROR "${PTX}: ${shared_bytes} bytes of static shared memory, over the 2 KiB limit")
endif()
