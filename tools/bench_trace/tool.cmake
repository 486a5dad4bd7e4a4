# bench_trace: the sparse executor's decode speed on token dumps of real
# launches (qgpu run --backend model-trace --dump-tokens), every token checked.
if(TARGET qgpu_qwen)
  add_executable(bench_trace ${CMAKE_CURRENT_LIST_DIR}/bench_trace.cpp)
  target_link_libraries(bench_trace PRIVATE qgpu_qwen CLI11::CLI11)
  qgpu_torch_pch(bench_trace)
endif()
