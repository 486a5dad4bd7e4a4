# bench_nvrtc: nvrtcCompileProgram (in process, libnvrtc.so.13) against
# running clang-19 as a subprocess on the same source with the same headers.
if(TARGET qgpu_nvrtc)
  find_program(QGPU_CLANG19_BENCH clang-19)
  add_executable(bench_nvrtc ${CMAKE_CURRENT_LIST_DIR}/main.cpp)
  target_include_directories(bench_nvrtc PRIVATE ${QGPU_CUDA_ROOT}/include)
  target_link_libraries(bench_nvrtc PRIVATE qgpu_nvrtc CLI11::CLI11)
  qgpu_paths(bench_nvrtc
    QGPU_RTC_DEVICE_HEADERS "${CMAKE_SOURCE_DIR}/libnvrtc_shim/device"
    QGPU_CLANG19 "${QGPU_CLANG19_BENCH}")
endif()
