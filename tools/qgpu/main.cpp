// qgpu: the user's entry point.  Each subcommand lives in its own cmd_*.cpp.
#include <algorithm>
#include <iostream>

#include "command.h"

int main(int argc, char** argv) {
  CLI::App app{"qgpu: a CUDA runtime whose GPU lives inside Qwen3.5's weights"};
  app.require_subcommand(1);
  auto& regs = qgpu::cli::Registry::all();
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
