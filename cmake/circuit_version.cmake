# The compiled model's version: a SHA-256 over the sources that determine its
# weights.  The sources are found, not listed: starting from the translation
# units that compile the GPU into a checkpoint, every project header they
# include ("model_host/...") is taken, with the .cpp beside it, and so on until
# nothing new is found.  A source the compiled model depends on therefore
# changes the version without anyone keeping a list up to date.
#
# Used two ways:
#   include(circuit_version.cmake) then qgpu_circuit_version(ROOT OUT_HASH OUT_FILES)
#   cmake -DROOT=<checkout> -P circuit_version.cmake      (prints "<hash> <n> files"; the tests use it)

if(CMAKE_SCRIPT_MODE_FILE)
  cmake_policy(VERSION 3.20)  # as the project sets it (IN_LIST, ...)
endif()

# The entry points: the machine as a circuit and the build-model step.
set(QGPU_CIRCUIT_ENTRIES model_host/machine_circuit/circuit.cpp model_host/model_cache/build_model.cpp)
# The circuit evaluator is the tests' oracle, not part of the compiler.
set(QGPU_CIRCUIT_EXCLUDE "^model_host/circuit/evaluator\\.(cpp|h)$")

function(qgpu_circuit_version root out_hash out_files)
  set(todo ${QGPU_CIRCUIT_ENTRIES})
  set(seen "")
  while(todo)
    list(POP_FRONT todo f)
    if(f IN_LIST seen OR f MATCHES "${QGPU_CIRCUIT_EXCLUDE}" OR NOT EXISTS "${root}/${f}")
      continue()
    endif()
    list(APPEND seen ${f})
    # A header brings the source that implements it.
    if(f MATCHES "^(.*)\\.h$")
      list(APPEND todo "${CMAKE_MATCH_1}.cpp")
    endif()
    file(STRINGS "${root}/${f}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"model_host/")
    foreach(line IN LISTS lines)
      if(line MATCHES "\"(model_host/[^\"]+)\"")
        list(APPEND todo ${CMAKE_MATCH_1})
      endif()
    endforeach()
  endwhile()
  list(SORT seen)
  set(hashes "")
  foreach(f IN LISTS seen)
    file(SHA256 "${root}/${f}" h)
    string(APPEND hashes "${f}:${h};")
  endforeach()
  string(SHA256 hash "${hashes}")
  set(${out_hash} ${hash} PARENT_SCOPE)
  set(${out_files} ${seen} PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE AND DEFINED ROOT)
  qgpu_circuit_version("${ROOT}" hash files)
  list(LENGTH files n)
  message("${hash} ${n} files")
  if(LIST)
    foreach(f IN LISTS files)
      message("  ${f}")
    endforeach()
  endif()
endif()
