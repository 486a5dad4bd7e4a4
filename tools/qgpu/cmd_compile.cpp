// qgpu compile FILE.ptx|FILE.cu [--kernel NAME] [--block X,Y,Z] [--grid X,Y,Z] [--lanes L]
// Lowers kernels for one launch configuration and prints their machine blocks.
#include <iostream>

#include "cmd_machine.h"
#include "command.h"
#include "model_host/machine/lower.h"

namespace {

qgpu::cli::Register reg("compile", [](CLI::App& app) {
  auto* sub =
      app.add_subcommand("compile", "Lower a kernel (.ptx, or .cu through nvcc) to machine blocks and print them");
  auto opt = std::make_shared<qgpu::machine::cli::LaunchOptions>();
  qgpu::machine::cli::add_launch_options(sub, *opt);
  return [opt]() {
    using namespace qgpu::machine;
    Params p = opt->params();
    ModuleImage img = load_module(ptx_of_file(opt->file), p);
    LaunchShape shape{opt->grid_dim(), opt->block_dim(), opt->dynamic_smem, img.symbols};
    int rc = 0;
    for (auto& f : img.module.functions) {
      if (!f.is_entry || !f.has_body || (!opt->kernel.empty() && f.name != opt->kernel)) continue;
      try {
        std::cout << to_string(lower(img.module, f.name, shape, p)) << "\n";
      } catch (const LowerError& e) {
        std::cout << "// " << f.name << ": not lowered: " << e.what() << "\n\n";
        rc = 1;
      }
    }
    return rc;
  };
});

}  // namespace
