// Subcommands of `qgpu` register themselves here, one file each
// (tools/qgpu/cmd_*.cpp), so every part of the product adds its own.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
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

}  // namespace qgpu::cli
