// Subcommands of `qgpu` register themselves here, one file each
// (tools/qgpu/cmd_*.cpp, and tools/qgpu/torch/cmd_*.cpp for those that need
// libtorch), so every part of the product adds its own.
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

namespace qgpu::cli {

// `setup` adds the subcommand to the app and returns the function to run when
// it was chosen; the function returns the process exit code.
using Setup = std::function<std::function<int()>(CLI::App& app)>;

struct Registry {
  static std::vector<std::pair<std::string, Setup>>& all() {
    static std::vector<std::pair<std::string, Setup>> v;
    return v;
  }
};

struct Register {
  Register(std::string name, Setup s) { Registry::all().emplace_back(std::move(name), std::move(s)); }
};

// Adds the registered subcommands to `app` in name order, parses the command
// line and runs the chosen one; returns the process exit code.
inline int run(CLI::App& app, int argc, char** argv) {
  app.require_subcommand(1);
  auto& regs = Registry::all();
  std::sort(regs.begin(), regs.end(), [](auto& a, auto& b) { return a.first < b.first; });
  std::vector<std::pair<CLI::App*, std::function<int()>>> runs;
  for (auto& [name, setup] : regs) {
    size_t before = app.get_subcommands({}).size();
    auto run = setup(app);
    auto subs = app.get_subcommands({});
    if (subs.size() > before) runs.emplace_back(subs.back(), std::move(run));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (auto& [sub, run] : runs)
    if (sub->parsed()) {
      try {
        return run();
      } catch (const std::exception& e) {
        std::cerr << "qgpu " << sub->get_name() << ": " << e.what() << "\n";
        return 1;
      }
    }
  return 1;
}

}  // namespace qgpu::cli
