// The NVRTC C API (nvrtc.h of CUDA 13), exported with the real library's
// version node.  Entry points this library does not provide print a one-time
// message and fail.
#include <nvrtc.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "compiler.h"
#include "cubin_container.h"
#include "options.h"

#define QGPU_NVRTC_API extern "C" __attribute__((visibility("default")))

struct _nvrtcProgram {
  qgpu::nvrtc::Source source;
  std::vector<std::string> name_expressions;
  bool compiled = false;  // nvrtcCompileProgram ran (successfully or not)
  bool succeeded = false;
  int arch = 0;
  std::string ptx, cubin, log;
  std::map<std::string, std::string> lowered_names;
};

namespace {

// Copies a result string including its NUL, as the NVRTC getters do.
nvrtcResult copy_out(const std::string& s, char* dst) {
  if (!dst) return NVRTC_ERROR_INVALID_INPUT;
  std::memcpy(dst, s.c_str(), s.size() + 1);
  return NVRTC_SUCCESS;
}

nvrtcResult size_out(const std::string& s, size_t* ret) {
  if (!ret) return NVRTC_ERROR_INVALID_INPUT;
  *ret = s.size() + 1;
  return NVRTC_SUCCESS;
}

nvrtcResult not_supported(const char* entry, const char* why) {
  static std::mutex mu;
  static std::vector<const char*> reported;
  std::lock_guard<std::mutex> lock(mu);
  for (const char* r : reported)
    if (r == entry) return NVRTC_ERROR_INVALID_INPUT;
  reported.push_back(entry);
  std::fprintf(stderr, "qgpu nvrtc: %s is not supported (%s)\n", entry, why);
  return NVRTC_ERROR_INVALID_INPUT;
}

}  // namespace

QGPU_NVRTC_API const char* nvrtcGetErrorString(nvrtcResult result) {
  switch (result) {
#define QGPU_CASE(x) \
  case x: return #x;
    QGPU_CASE(NVRTC_SUCCESS)
    QGPU_CASE(NVRTC_ERROR_OUT_OF_MEMORY)
    QGPU_CASE(NVRTC_ERROR_PROGRAM_CREATION_FAILURE)
    QGPU_CASE(NVRTC_ERROR_INVALID_INPUT)
    QGPU_CASE(NVRTC_ERROR_INVALID_PROGRAM)
    QGPU_CASE(NVRTC_ERROR_INVALID_OPTION)
    QGPU_CASE(NVRTC_ERROR_COMPILATION)
    QGPU_CASE(NVRTC_ERROR_BUILTIN_OPERATION_FAILURE)
    QGPU_CASE(NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION)
    QGPU_CASE(NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION)
    QGPU_CASE(NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID)
    QGPU_CASE(NVRTC_ERROR_INTERNAL_ERROR)
    QGPU_CASE(NVRTC_ERROR_TIME_FILE_WRITE_FAILED)
    QGPU_CASE(NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED)
    QGPU_CASE(NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED)
    QGPU_CASE(NVRTC_ERROR_PCH_CREATE)
    QGPU_CASE(NVRTC_ERROR_CANCELLED)
    QGPU_CASE(NVRTC_ERROR_TIME_TRACE_FILE_WRITE_FAILED)
#undef QGPU_CASE
  }
  return "NVRTC_ERROR unknown";
}

QGPU_NVRTC_API nvrtcResult nvrtcVersion(int* major, int* minor) {
  if (!major || !minor) return NVRTC_ERROR_INVALID_INPUT;
  *major = 13;
  *minor = 0;
  return NVRTC_SUCCESS;
}

QGPU_NVRTC_API nvrtcResult nvrtcGetNumSupportedArchs(int* count) {
  if (!count) return NVRTC_ERROR_INVALID_INPUT;
  *count = static_cast<int>(qgpu::nvrtc::supported_archs().size());
  return NVRTC_SUCCESS;
}

QGPU_NVRTC_API nvrtcResult nvrtcGetSupportedArchs(int* archs) {
  if (!archs) return NVRTC_ERROR_INVALID_INPUT;
  for (int a : qgpu::nvrtc::supported_archs()) *archs++ = a;
  return NVRTC_SUCCESS;
}

QGPU_NVRTC_API nvrtcResult nvrtcCreateProgram(nvrtcProgram* prog, const char* src, const char* name,
                                              int num_headers, const char* const* headers,
                                              const char* const* include_names) {
  if (!prog || !src || num_headers < 0 || (num_headers > 0 && (!headers || !include_names)))
    return NVRTC_ERROR_INVALID_INPUT;
  try {
    auto p = std::make_unique<_nvrtcProgram>();
    p->source.name = name && *name ? name : "default_program";
    p->source.text = src;
    for (int i = 0; i < num_headers; ++i) {
      if (!include_names[i]) return NVRTC_ERROR_INVALID_INPUT;
      p->source.headers.emplace_back(include_names[i], headers[i] ? headers[i] : "");
    }
    *prog = p.release();
    return NVRTC_SUCCESS;
  } catch (const std::bad_alloc&) {
    return NVRTC_ERROR_OUT_OF_MEMORY;
  }
}

QGPU_NVRTC_API nvrtcResult nvrtcDestroyProgram(nvrtcProgram* prog) {
  if (!prog || !*prog) return NVRTC_ERROR_INVALID_PROGRAM;
  delete *prog;
  *prog = nullptr;
  return NVRTC_SUCCESS;
}

QGPU_NVRTC_API nvrtcResult nvrtcAddNameExpression(nvrtcProgram prog, const char* expr) {
  if (!prog) return NVRTC_ERROR_INVALID_PROGRAM;
  if (!expr || !*expr) return NVRTC_ERROR_INVALID_INPUT;
  if (prog->compiled) return NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION;
  prog->name_expressions.emplace_back(expr);
  return NVRTC_SUCCESS;
}

QGPU_NVRTC_API nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int num_options,
                                               const char* const* options) {
  if (!prog) return NVRTC_ERROR_INVALID_PROGRAM;
  if (num_options < 0 || (num_options > 0 && !options)) return NVRTC_ERROR_INVALID_INPUT;
  try {
    std::vector<std::string> args;
    for (int i = 0; i < num_options; ++i) {
      if (!options[i]) return NVRTC_ERROR_INVALID_INPUT;
      args.emplace_back(options[i]);
    }
    qgpu::nvrtc::ParsedOptions parsed = qgpu::nvrtc::parse_options(args);
    prog->compiled = true;
    prog->succeeded = false;
    prog->ptx.clear();
    prog->cubin.clear();
    prog->lowered_names.clear();
    if (!parsed.error.empty()) {
      prog->log = "nvrtc: error: " + parsed.error + "\n";
      return NVRTC_ERROR_INVALID_OPTION;
    }
    qgpu::nvrtc::CompileOutput out =
        qgpu::nvrtc::compile(prog->source, parsed.options, prog->name_expressions);
    prog->log = std::move(out.log);
    if (!out.ok) return NVRTC_ERROR_COMPILATION;
    prog->succeeded = true;
    prog->arch = parsed.options.arch;
    prog->ptx = std::move(out.ptx);
    prog->lowered_names = std::move(out.lowered_names);
    if (!parsed.options.syntax_only)
      prog->cubin = qgpu::rtc_cubin::wrap(prog->ptx, static_cast<uint32_t>(prog->arch));
    return NVRTC_SUCCESS;
  } catch (const std::bad_alloc&) {
    return NVRTC_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    prog->log += std::string("nvrtc: internal error: ") + e.what() + "\n";
    return NVRTC_ERROR_INTERNAL_ERROR;
  }
}

QGPU_NVRTC_API nvrtcResult nvrtcGetPTXSize(nvrtcProgram prog, size_t* size) {
  if (!prog || !prog->succeeded) return NVRTC_ERROR_INVALID_PROGRAM;
  return size_out(prog->ptx, size);
}

QGPU_NVRTC_API nvrtcResult nvrtcGetPTX(nvrtcProgram prog, char* ptx) {
  if (!prog || !prog->succeeded) return NVRTC_ERROR_INVALID_PROGRAM;
  return copy_out(prog->ptx, ptx);
}

QGPU_NVRTC_API nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog, size_t* size) {
  if (!prog || !prog->succeeded) return NVRTC_ERROR_INVALID_PROGRAM;
  if (!size) return NVRTC_ERROR_INVALID_INPUT;
  *size = prog->cubin.size();  // the container already ends in a NUL
  return NVRTC_SUCCESS;
}

QGPU_NVRTC_API nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char* cubin) {
  if (!prog || !prog->succeeded) return NVRTC_ERROR_INVALID_PROGRAM;
  if (!cubin) return NVRTC_ERROR_INVALID_INPUT;
  std::memcpy(cubin, prog->cubin.data(), prog->cubin.size());
  return NVRTC_SUCCESS;
}

QGPU_NVRTC_API nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram prog, size_t* size) {
  if (!prog) return NVRTC_ERROR_INVALID_PROGRAM;
  return size_out(prog->log, size);
}

QGPU_NVRTC_API nvrtcResult nvrtcGetProgramLog(nvrtcProgram prog, char* log) {
  if (!prog) return NVRTC_ERROR_INVALID_PROGRAM;
  return copy_out(prog->log, log);
}

QGPU_NVRTC_API nvrtcResult nvrtcGetLoweredName(nvrtcProgram prog, const char* expr,
                                               const char** lowered) {
  if (!prog) return NVRTC_ERROR_INVALID_PROGRAM;
  if (!expr || !lowered) return NVRTC_ERROR_INVALID_INPUT;
  if (!prog->compiled) return NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION;
  auto it = prog->lowered_names.find(expr);
  if (it == prog->lowered_names.end()) return NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID;
  *lowered = it->second.c_str();
  return NVRTC_SUCCESS;
}

// ---------------------------------------------------------------- not provided
QGPU_NVRTC_API nvrtcResult nvrtcGetLTOIRSize(nvrtcProgram, size_t*) {
  return not_supported("nvrtcGetLTOIRSize", "no LTO IR: programs compile to PTX");
}
QGPU_NVRTC_API nvrtcResult nvrtcGetLTOIR(nvrtcProgram, char*) {
  return not_supported("nvrtcGetLTOIR", "no LTO IR: programs compile to PTX");
}
QGPU_NVRTC_API nvrtcResult nvrtcGetOptiXIRSize(nvrtcProgram, size_t*) {
  return not_supported("nvrtcGetOptiXIRSize", "no OptiX IR: programs compile to PTX");
}
QGPU_NVRTC_API nvrtcResult nvrtcGetOptiXIR(nvrtcProgram, char*) {
  return not_supported("nvrtcGetOptiXIR", "no OptiX IR: programs compile to PTX");
}
QGPU_NVRTC_API nvrtcResult nvrtcGetPCHHeapSize(size_t*) {
  return not_supported("nvrtcGetPCHHeapSize", "no precompiled headers");
}
QGPU_NVRTC_API nvrtcResult nvrtcSetPCHHeapSize(size_t) {
  return not_supported("nvrtcSetPCHHeapSize", "no precompiled headers");
}
QGPU_NVRTC_API nvrtcResult nvrtcGetPCHCreateStatus(nvrtcProgram) {
  return not_supported("nvrtcGetPCHCreateStatus", "no precompiled headers");
}
QGPU_NVRTC_API nvrtcResult nvrtcGetPCHHeapSizeRequired(nvrtcProgram, size_t*) {
  return not_supported("nvrtcGetPCHHeapSizeRequired", "no precompiled headers");
}
QGPU_NVRTC_API nvrtcResult nvrtcSetFlowCallback(nvrtcProgram, int (*)(void*, void*), void*) {
  return not_supported("nvrtcSetFlowCallback", "compilations cannot be cancelled");
}
// An undocumented export of the real library; its arguments are not used.
QGPU_NVRTC_API nvrtcResult __nvrtcCPEx() {
  return not_supported("__nvrtcCPEx", "undocumented entry point");
}
