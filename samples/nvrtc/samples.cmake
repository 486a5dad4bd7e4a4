# NVRTC / driver API samples: host programs built against the real CUDA
# headers and linked against the real libnvrtc and libcuda names (the
# toolkit's libnvrtc.so and stubs/libcuda.so), without a run path to them,
# so that LD_LIBRARY_PATH=<build>/lib loads qgpu's drop-ins.  Each prints
# PASSED or FAILED.  Outputs: <build>/samples/nvrtc/<name>.
if(NOT TARGET qgpu_nvrtc OR NOT TARGET qgpu_cuda)
  return()
endif()
set(_nvrtc_samples defines templates reduction compile_error)
set(_nvrtc_dir ${CMAKE_SOURCE_DIR}/samples/nvrtc)
foreach(s ${_nvrtc_samples})
  add_executable(nvrtc_${s} ${_nvrtc_dir}/${s}.cpp)
  target_include_directories(nvrtc_${s} PRIVATE ${QGPU_CUDA_ROOT}/include)
  target_link_libraries(nvrtc_${s} PRIVATE ${QGPU_CUDA_ROOT}/lib64/libnvrtc.so
                        ${QGPU_CUDA_ROOT}/lib64/stubs/libcuda.so)
  set_target_properties(nvrtc_${s} PROPERTIES
    OUTPUT_NAME ${s}
    RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/samples/nvrtc
    SKIP_BUILD_RPATH ON)
  # Built with the drop-ins they run on.
  add_dependencies(nvrtc_${s} qgpu_nvrtc qgpu_cuda)
endforeach()
