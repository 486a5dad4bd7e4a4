#include "options.h"

#include <algorithm>
#include <array>
#include <string_view>

namespace qgpu::nvrtc {

const std::vector<int>& supported_archs() {
  static const std::vector<int> archs = {75, 80, 86, 87, 89, 90};
  return archs;
}

namespace {

// Options NVRTC defines that only tune code generation for real hardware
// (register limits, float modes, debug info, optimisation splits).  They are
// accepted and have no effect on the PTX the machine runs.
constexpr std::array<std::string_view, 24> kNoEffectFlags = {
    "-G", "--device-debug", "-lineinfo", "--generate-line-info", "-use_fast_math",
    "--use_fast_math", "-restrict", "--restrict", "-extra-device-vectorization",
    "--extra-device-vectorization", "-dopt=on", "--dopt=on", "-dopt=off", "--dopt=off",
    "-rdc=false", "--relocatable-device-code=false", "-Wno-deprecated-gpu-targets",
    "--Wno-deprecated-gpu-targets", "-Wno-deprecated-declarations", "--Wno-deprecated-declarations",
    "-builtin-move-forward=true", "-builtin-initializer-list=true", "-no-source-include",
    "--no-source-include"};
// The same, for options that take a value: "-name=value".
constexpr std::array<std::string_view, 16> kNoEffectValued = {
    "-ftz", "--ftz", "-prec-div", "--prec-div", "-prec-sqrt", "--prec-sqrt", "-fmad", "--fmad",
    "-maxrregcount", "--maxrregcount", "-split-compile", "--split-compile", "-minimal", "--minimal",
    "-optimization-info", "--optimization-info"};
// Options whose effect this NVRTC does not provide: rejected, not ignored.
// Listed by name; "-name=value" forms match the name.
constexpr std::array<std::string_view, 12> kUnsupported = {
    "-rdc=true", "--relocatable-device-code=true", "-dc", "-dlto", "--dlto", "-pch", "--pch",
    "-create-pch", "--create-pch", "-use-pch", "--use-pch", "-time"};

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Matches `arg` against the spellings of a valued option ("-I dir", "-Idir",
// "-I=dir", "--include-path=dir"), consuming the next argument when the value
// is separate.  Returns false when `arg` is not this option.
bool take_value(const std::vector<std::string>& args, size_t& i,
                std::initializer_list<std::string_view> short_forms,
                std::initializer_list<std::string_view> long_forms, std::string& value,
                std::string& error) {
  std::string_view arg = args[i];
  for (std::string_view f : long_forms) {
    if (arg == f) break;  // handled below as a separate value
    if (starts_with(arg, f) && arg[f.size()] == '=') {
      value = std::string(arg.substr(f.size() + 1));
      return true;
    }
  }
  for (std::string_view f : short_forms) {
    if (starts_with(arg, f) && arg.size() > f.size()) {
      std::string_view rest = arg.substr(f.size());
      value = std::string(rest[0] == '=' ? rest.substr(1) : rest);
      return true;
    }
  }
  bool exact = std::find(short_forms.begin(), short_forms.end(), arg) != short_forms.end() ||
               std::find(long_forms.begin(), long_forms.end(), arg) != long_forms.end();
  if (!exact) return false;
  if (i + 1 >= args.size()) {
    error = "option '" + std::string(arg) + "' needs a value";
    return true;
  }
  value = args[++i];
  return true;
}

bool parse_arch(const std::string& value, int& arch) {
  for (std::string_view prefix : {"compute_", "sm_"}) {
    if (!starts_with(value, prefix)) continue;
    std::string digits = value.substr(prefix.size());
    if (digits.empty() || digits.size() > 3 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return false;
    int n = std::stoi(digits);
    const auto& ok = supported_archs();
    if (std::find(ok.begin(), ok.end(), n) == ok.end()) return false;
    arch = n;
    return true;
  }
  return false;
}

bool is_unsupported(std::string_view arg) {
  std::string_view name = arg.substr(0, arg.find('='));
  return std::find(kUnsupported.begin(), kUnsupported.end(), arg) != kUnsupported.end() ||
         std::find(kUnsupported.begin(), kUnsupported.end(), name) != kUnsupported.end();
}

std::string supported_arch_list() {
  std::string s;
  for (int a : supported_archs()) s += (s.empty() ? "" : ", ") + ("compute_" + std::to_string(a));
  return s;
}

}  // namespace

ParsedOptions parse_options(const std::vector<std::string>& args) {
  ParsedOptions out;
  CompileOptions& o = out.options;
  std::string& err = out.error;
  for (size_t i = 0; i < args.size() && err.empty(); ++i) {
    const std::string& arg = args[i];
    std::string v;
    auto valued = [&](std::initializer_list<std::string_view> short_forms,
                      std::initializer_list<std::string_view> long_forms) {
      return take_value(args, i, short_forms, long_forms, v, err);
    };
    if (valued({"-arch"}, {"--gpu-architecture"})) {
      if (err.empty() && !parse_arch(v, o.arch))
        err = "invalid GPU architecture '" + v + "' (supported: " + supported_arch_list() +
              " and the matching sm_XX)";
    } else if (valued({"-D"}, {"--define-macro"})) {
      o.preprocessor.push_back("-D" + v);
    } else if (valued({"-U"}, {"--undefine-macro"})) {
      o.preprocessor.push_back("-U" + v);
    } else if (valued({"-I"}, {"--include-path"})) {
      o.include_paths.push_back(v);
    } else if (valued({"-include"}, {"--pre-include"})) {
      o.pre_includes.push_back(v);
    } else if (valued({"-std"}, {"--std"})) {
      static const std::array<std::string_view, 5> dialects = {"c++03", "c++11", "c++14",
                                                                "c++17", "c++20"};
      if (err.empty() && std::find(dialects.begin(), dialects.end(), v) == dialects.end())
        err = "invalid C++ dialect '" + v + "' (supported: c++03, c++11, c++14, c++17, c++20)";
      o.std = v;
    } else if (arg == "-default-device" || arg == "--device-as-default-execution-space") {
      o.default_device = true;
    } else if (arg == "-fdevice-syntax-only" || arg == "--fdevice-syntax-only") {
      o.syntax_only = true;
    } else if (arg == "-w" || arg == "--disable-warnings") {
      o.no_warnings = true;
    } else if (std::find(kNoEffectFlags.begin(), kNoEffectFlags.end(), arg) !=
                   kNoEffectFlags.end() ||
               std::any_of(kNoEffectValued.begin(), kNoEffectValued.end(), [&](std::string_view f) {
                 return starts_with(arg, f) && arg.size() > f.size() && arg[f.size()] == '=';
               })) {
      continue;
    } else if (is_unsupported(arg)) {
      err = "option '" + arg + "' is not supported by qgpu's NVRTC (it compiles whole programs to PTX)";
    } else {
      err = "unrecognized option '" + arg + "'";
    }
  }
  return out;
}

}  // namespace qgpu::nvrtc
