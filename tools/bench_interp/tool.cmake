# bench_interp: the reference interpreter's speed in lane-instructions per
# second on a few kernels (a benchmark, not a test).
if(TARGET qgpu_lower)
  set(_bench_interp_ptx ${CMAKE_CURRENT_BINARY_DIR}/bench_interp_kernels.ptx)
  add_custom_command(
    OUTPUT ${_bench_interp_ptx}
    COMMAND ${QGPU_CUDA_ROOT}/bin/nvcc -ptx -arch=sm_75 -o ${_bench_interp_ptx} ${CMAKE_CURRENT_LIST_DIR}/kernels.cu
    DEPENDS ${CMAKE_CURRENT_LIST_DIR}/kernels.cu
    COMMENT "nvcc -ptx: bench_interp kernels"
    VERBATIM)
  add_custom_target(bench_interp_kernels DEPENDS ${_bench_interp_ptx})
  add_executable(bench_interp ${CMAKE_CURRENT_LIST_DIR}/bench_interp.cpp)
  add_dependencies(bench_interp bench_interp_kernels)
  target_link_libraries(bench_interp PRIVATE qgpu_machine qgpu_lower CLI11::CLI11)
  qgpu_paths(bench_interp QGPU_BENCH_INTERP_PTX "${_bench_interp_ptx}")
endif()
