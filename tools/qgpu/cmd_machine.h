// Options shared by the machine's subcommands (compile, interp).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "model_host/launch/launch.h"
#include "model_host/machine/image.h"
#include "model_host/machine/isa.h"

namespace qgpu::machine::cli {

struct LaunchOptions {
  std::string file, kernel, grid = "1,1,1", block = "32,1,1";
  uint32_t dynamic_smem = 0;
  uint32_t lanes = 0;  // 0: the machine's own

  Params params() const {
    Params p = default_params();
    if (lanes) p.lanes = lanes;
    if (Params::kCudaWarp % p.lanes != 0) throw std::invalid_argument("--lanes must divide 32");
    return p;
  }
  launch::Dim3 grid_dim() const { return parse_dim(grid); }
  launch::Dim3 block_dim() const { return parse_dim(block); }

  static launch::Dim3 parse_dim(const std::string& s) {
    launch::Dim3 d;
    uint32_t* f[3] = {&d.x, &d.y, &d.z};
    size_t at = 0;
    for (int i = 0; i < 3 && at <= s.size(); ++i) {
      size_t comma = s.find(',', at);
      std::string part = s.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
      if (part.empty()) throw std::invalid_argument("bad dimension `" + s + "`: expected X[,Y[,Z]]");
      *f[i] = uint32_t(std::stoul(part));
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
    return d;
  }
};

inline void add_launch_options(CLI::App* sub, LaunchOptions& o) {
  sub->add_option("file", o.file, "PTX file, or CUDA source (.cu) compiled with nvcc -ptx")->required();
  sub->add_option("--kernel,-k", o.kernel, "kernel (.entry) name; default: every kernel");
  sub->add_option("--grid,-g", o.grid, "grid dimensions X,Y,Z");
  sub->add_option("--block,-b", o.block, "block dimensions X,Y,Z");
  sub->add_option("--smem", o.dynamic_smem, "dynamic shared memory bytes");
  sub->add_option("--lanes", o.lanes, "lanes per machine warp (divides 32); default: the machine's");
}

}  // namespace qgpu::machine::cli
