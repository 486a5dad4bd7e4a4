// qgpu: the user's entry point.  Each subcommand lives in its own cmd_*.cpp;
// those that need libtorch run in qgpu-torch (torch_commands.h).
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string_view>

#include "command.h"
#include "torch_commands.h"

namespace {

// Replaces this process by qgpu-torch, to run subcommand `name`, with the
// same arguments.
int exec_torch(const char* name, char** argv) {
  const std::string path = qgpu::cli::torch_program().string();
  argv[0] = const_cast<char*>(path.c_str());
  execv(path.c_str(), argv);
  const int err = errno;
  if (err == ENOENT)
    std::cerr << "qgpu " << name << ": " << path
              << " is missing (it runs the subcommands that need libtorch); build the project first\n";
  else
    std::cerr << "qgpu " << name << ": cannot run " << path << ": " << std::strerror(err) << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything is parsed: qgpu-torch parses its subcommands' options.
  if (argc > 1)
    for (const auto& c : qgpu::cli::kTorchCommands)
      if (std::string_view(argv[1]) == c.name) return exec_torch(c.name, argv);
  // And in the help, in name order with the others.
  for (const auto& c : qgpu::cli::kTorchCommands)
    qgpu::cli::Registry::all().emplace_back(c.name, [&c, argv](CLI::App& app) -> std::function<int()> {
      app.add_subcommand(c.name, c.description);
      return [&c, argv] { return exec_torch(c.name, argv); };
    });
  CLI::App app{"qgpu: a CUDA runtime whose GPU lives inside Qwen3.5's weights"};
  return qgpu::cli::run(app, argc, argv);
}
