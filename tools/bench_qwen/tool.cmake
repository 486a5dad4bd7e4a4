# bench_qwen: decoding speed and memory of the Qwen3.5 runtime, dense and sparse.
if(TARGET qgpu_qwen)
  add_executable(bench_qwen ${CMAKE_CURRENT_LIST_DIR}/bench_qwen.cpp)
  target_link_libraries(bench_qwen PRIVATE qgpu_qwen CLI11::CLI11)
  qgpu_torch_pch(bench_qwen)
endif()
