// qgpu-torch: the subcommands of qgpu that need libtorch (torch_commands.h),
// each in its own cmd_*.cpp here.  qgpu runs this program for them, with the
// same arguments.
#include "command.h"

int main(int argc, char** argv) {
  // Named qgpu, the command the user runs, for the usage lines of the help.
  CLI::App app{"qgpu-torch: the subcommands of qgpu that need libtorch; run them as `qgpu SUBCOMMAND`", "qgpu"};
  return qgpu::cli::run(app, argc, argv);
}
