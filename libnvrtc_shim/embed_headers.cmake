# Writes a C++ source defining qgpu::nvrtc::builtin_headers() from the files
# in device/, so the device headers are compiled into the library.
# Invoked as: cmake -DOUT=<file.cpp> -DDIR=<device dir> -P embed_headers.cmake
cmake_minimum_required(VERSION 3.25)
file(GLOB headers RELATIVE ${DIR} ${DIR}/*)
list(SORT headers)
set(body "")
foreach(h ${headers})
  file(READ ${DIR}/${h} text)
  string(APPEND body "      {\"${h}\", R\"qgpu_rtc_header(${text})qgpu_rtc_header\"},\n")
endforeach()
file(WRITE ${OUT}.tmp "// Generated from libnvrtc_shim/device by embed_headers.cmake.
#include \"compiler.h\"

namespace qgpu::nvrtc {
const std::map<std::string, std::string>& builtin_headers() {
  static const std::map<std::string, std::string> headers = {
${body}  };
  return headers;
}
}  // namespace qgpu::nvrtc
")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.tmp)
