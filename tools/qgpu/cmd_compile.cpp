// qgpu compile FILE.ptx|FILE.cu [--kernel NAME] [--block X,Y,Z] [--grid X,Y,Z] [--lanes L] [--machine model]
// Lowers kernels for one launch configuration and prints their machine
// blocks; with --machine model, for the model's machine (docs/tokens.md),
// followed by whether the model's circuit can run the program.
#include <iostream>

#include "cmd_machine.h"
#include "command.h"
#include "model_host/lower/lower.h"
#include "model_host/machine/api.h"

namespace {

qgpu::cli::Register reg("compile", [](CLI::App& app) {
  auto* sub =
      app.add_subcommand("compile", "Lower a kernel (.ptx, or .cu through nvcc) to machine blocks and print them");
  auto opt = std::make_shared<qgpu::machine::cli::LaunchOptions>();
  auto machine = std::make_shared<std::string>("default");
  qgpu::machine::cli::add_launch_options(sub, *opt);
  sub->add_option("--machine", *machine,
                  "default; model: the model's machine and its lowering; cuda: the interpreter backend's "
                  "CUDA-sized device (32 lanes, native float operations)")
      ->check(CLI::IsMember({"default", "model", "cuda"}))
      ->capture_default_str();
  return [opt, machine]() {
    using namespace qgpu::machine;
    const bool model = *machine == "model", cuda = *machine == "cuda";
    if ((model || cuda) && opt->lanes)
      throw std::invalid_argument("--lanes and --machine " + *machine + " exclude each other");
    Params p = model ? model_params() : cuda ? cuda_params() : opt->params();
    ModuleImage img = load_module(ptx_of_file(opt->file), p);
    LaunchShape shape{opt->grid_dim(), opt->block_dim(), opt->dynamic_smem, img.symbols};
    int rc = 0;
    for (auto& f : img.module.functions) {
      if (!f.is_entry || !f.has_body || (!opt->kernel.empty() && f.name != opt->kernel)) continue;
      try {
        Program prog = lower(img.module, f.name, shape, p, {.for_model = model, .native_float = p.native_float});
        std::cout << to_string(prog);
        if (model) {
          auto why = model_unsupported(prog);
          std::cout << "// model circuit: " << (why ? *why : "yes") << "\n";
        }
        std::cout << "\n";
      } catch (const LowerError& e) {
        std::cout << "// " << f.name << ": not lowered: " << e.what() << "\n\n";
        rc = 1;
      }
    }
    return rc;
  };
});

}  // namespace
