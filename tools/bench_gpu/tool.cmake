# bench_gpu: decode and prefill speed of the sparse executor on the compiled
# GPU checkpoint (model_host/machine_circuit), on a launch checked against the reference
# interpreter's trace.
if(TARGET qgpu_model_build)
  add_executable(bench_gpu ${CMAKE_CURRENT_LIST_DIR}/bench_gpu.cpp)
  target_link_libraries(bench_gpu PRIVATE qgpu_model_build CLI11::CLI11)
  qgpu_torch_pch(bench_gpu)
endif()
