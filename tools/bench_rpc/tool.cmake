# bench_rpc: round-trip latency and copy bandwidth between a client and
# model_host over ipc:// (a benchmark, not a test).
add_executable(bench_rpc ${CMAKE_CURRENT_LIST_DIR}/bench_rpc.cpp)
target_link_libraries(bench_rpc PRIVATE qgpu_client CLI11::CLI11)
