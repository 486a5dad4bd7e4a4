# The model cache's version follows the sources the compiled model depends on
# (cmake/circuit_version.cmake): run as
#   cmake -DROOT=<checkout> -DWORK=<scratch dir> -P circuit_version_test.cmake
# On a copy of the sources: touching a file the build-model sources reach
# through their includes (the matrix and config code of the Qwen runtime,
# which no hand-kept list named once) changes the version; touching a file
# they do not reach (the daemon, the circuit evaluator that the tests use as
# their oracle) leaves it.
cmake_policy(VERSION 3.20)
include(${ROOT}/cmake/circuit_version.cmake)

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
file(COPY ${ROOT}/model_host DESTINATION ${WORK})
qgpu_circuit_version(${WORK} base files)
qgpu_circuit_version(${ROOT} original files)
if(NOT base STREQUAL original)
  message(FATAL_ERROR "a copy of the sources has another version than the sources")
endif()

function(expect file changes)
  file(READ ${WORK}/${file} text)
  file(APPEND ${WORK}/${file} "\n// touched\n")
  qgpu_circuit_version(${WORK} touched files)
  file(WRITE ${WORK}/${file} "${text}")
  if(changes AND touched STREQUAL base)
    message(FATAL_ERROR "touching ${file} left the circuit version as it was")
  elseif(NOT changes AND NOT touched STREQUAL base)
    message(FATAL_ERROR "touching ${file} changed the circuit version")
  endif()
  message("${file}: version ${touched} (changes: ${changes})")
endfunction()

expect(model_host/qwen/matrix.cpp TRUE)
expect(model_host/qwen/config.cpp TRUE)
expect(model_host/circuit/compiler.cpp TRUE)
expect(model_host/circuit/placement.cpp TRUE)
expect(model_host/machine_circuit/circuit.cpp TRUE)
expect(model_host/machine_circuit/alu.cpp TRUE)
expect(model_host/model_cache/build_model.cpp TRUE)
expect(model_host/machine/isa.h TRUE)
expect(model_host/daemon/main.cpp FALSE)
expect(model_host/circuit/evaluator.cpp FALSE)
file(REMOVE_RECURSE ${WORK})
