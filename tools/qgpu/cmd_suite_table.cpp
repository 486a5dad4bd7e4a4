// qgpu suite-table DIR [--no-run] [--block N] [--machine model]
// The kernel suite as the machine sees it: for every sample in DIR (a samples
// build directory: manifest.txt, the programs, ptx/<name>*.ptx), the machine
// instructions and blocks of its kernels (lowered for one block of N threads,
// since the lowering specialises per launch), and, unless --no-run, the
// sample run under qgpu with the interpreter backend: its launches,
// interpreter steps and verdict (the PASSED/FAILED line it prints).
// With --machine model, the kernels are lowered for the model's machine, the
// samples run on it (backend model-trace: the reference interpreter writes
// the trace the model must write), columns give the tokens of that trace
// (prompt and generated, summed over launches) and the generated tokens per
// step (the model's machine runs one instruction per step: tokens per
// executed thread-instruction), a column says whether the model's circuit can
// run every kernel, or names the first thing it cannot, and a last line sums
// the samples that ran.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <iostream>
#include <regex>

#include "command.h"
#include "model_host/machine/image.h"
#include "model_host/lower/lower.h"

namespace fs = std::filesystem;

namespace {

using namespace qgpu::machine;

struct Row {
  std::string name;
  int kernels = 0, lowered = 0;
  uint64_t instructions = 0, blocks = 0;
  std::string launches = "-", steps = "-", prompt = "-", generated = "-", result = "-", note;
  std::string model_circuit = "yes";  // --machine model: "yes", or why not
};

void lower_sample(const fs::path& dir, Row& row, uint32_t block, bool model) {
  const Params& params = model ? model_params() : default_params();
  std::vector<fs::path> files;
  for (auto& e : fs::directory_iterator(dir / "ptx")) {
    std::string f = e.path().filename().string();
    if (f == row.name + ".ptx" || (f.starts_with(row.name + ".") && f.ends_with(".ptx"))) files.push_back(e.path());
  }
  for (auto& f : files) {
    ModuleImage img = load_module(ptx_of_file(f.string()), params);
    for (auto& fn : img.module.functions) {
      if (!fn.is_entry || !fn.has_body) continue;
      ++row.kernels;
      try {
        Program p =
            lower(img.module, fn.name, {{1, 1, 1}, {block, 1, 1}, 0, img.symbols}, params, {.for_model = model});
        ++row.lowered;
        row.instructions += p.instr_count();
        row.blocks += p.blocks.size();
        if (auto why = model ? model_unsupported(p) : std::nullopt; why && row.model_circuit == "yes")
          row.model_circuit = *why;
      } catch (const LowerError& e) {
        if (row.note.empty()) row.note = e.what();
        if (row.model_circuit == "yes") row.model_circuit = "a kernel is not lowered (see the note)";
      }
    }
  }
}

void run_sample(const fs::path& dir, Row& row, const std::string& backend) {
  std::string self = fs::read_symlink("/proc/self/exe").string();
  std::string cmd =
      "'" + self + "' run --backend " + backend + " --stats -- '" + (dir / row.name).string() + "' 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return;
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  pclose(p);
  std::smatch m;
  if (std::regex_search(out, m, std::regex("launches=(\\d+) steps=(\\d+) tokens: prompt=(\\d+) generated=(\\d+)"))) {
    row.launches = m[1];
    row.steps = m[2];
    row.prompt = m[3];
    row.generated = m[4];
  }
  row.result = out.find("PASSED") != std::string::npos   ? "PASSED"
               : out.find("FAILED") != std::string::npos ? "FAILED"
                                                         : "no verdict";
}

qgpu::cli::Register reg("suite-table", [](CLI::App& app) {
  auto* sub = app.add_subcommand("suite-table", "Per-sample table: machine instructions, blocks, interpreter steps");
  auto dir = std::make_shared<std::string>();
  auto no_run = std::make_shared<bool>(false);
  auto block = std::make_shared<uint32_t>(128);
  auto machine = std::make_shared<std::string>("default");
  sub->add_option("dir", *dir, "samples build directory (manifest.txt, programs, ptx/)")->required();
  sub->add_flag("--no-run", *no_run, "only lower the kernels; do not run the samples");
  sub->add_option("--block", *block, "threads per block the kernels are lowered for");
  sub->add_option("--machine", *machine, "default, or model: the model's machine, its lowering and its circuit")
      ->check(CLI::IsMember({"default", "model"}))
      ->capture_default_str();
  return [dir, no_run, block, machine]() {
    const bool model = *machine == "model";
    fs::path d = *dir;
    std::ifstream manifest(d / "manifest.txt");
    if (!manifest)
      throw std::runtime_error((d / "manifest.txt").string() + " not found: is this a samples build directory?");
    std::cout << "| sample | kernels (lowered) | machine instructions | blocks | launches | interpreter steps | result |"
              << (model ? " prompt tokens | generated tokens | generated per step | model circuit |\n" : "\n")
              << "| --- | --- | --- | --- | --- | --- | --- |" << (model ? " --- | --- | --- | --- |\n" : "\n");
    uint64_t total_steps = 0, total_generated = 0, total_prompt = 0;
    int counted = 0;
    auto ratio = [](uint64_t tokens, uint64_t steps) {
      if (steps == 0) return std::string("-");
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.3f", double(tokens) / double(steps));
      return std::string(buf);
    };
    std::vector<std::string> notes;
    // Samples too large for the model's device (samples/CMakeLists.txt).
    std::set<std::string> interpreter_only;
    std::ifstream only(d / "interpreter_only.txt");
    for (std::string name; std::getline(only, name);)
      if (!name.empty()) interpreter_only.insert(name);
    for (std::string name; std::getline(manifest, name);) {
      if (name.empty()) continue;
      if (model && interpreter_only.count(name)) {
        notes.push_back(name + ": interpreter only (too large for the model's device)");
        continue;
      }
      Row row;
      row.name = name;
      lower_sample(d, row, *block, model);
      if (!*no_run) run_sample(d, row, model ? "model-trace" : "interpreter");
      std::string per_step = "-";
      if (row.generated != "-") {
        const uint64_t steps = std::stoull(row.steps), generated = std::stoull(row.generated);
        per_step = ratio(generated, steps);
        total_steps += steps, total_generated += generated, total_prompt += std::stoull(row.prompt), ++counted;
      }
      std::cout << "| " << row.name << " | " << row.kernels << " (" << row.lowered << ") | " << row.instructions
                << " | " << row.blocks << " | " << row.launches << " | " << row.steps << " | " << row.result << " |"
                << (model ? " " + row.prompt + " | " + row.generated + " | " + per_step + " | " + row.model_circuit + " |\n"
                          : "\n");
      if (!row.note.empty()) notes.push_back(row.name + ": " + row.note);
    }
    if (model && counted > 0)
      std::cout << "\n" << counted << " samples: " << total_steps << " steps, " << total_prompt << " prompt tokens, "
                << total_generated << " generated tokens, " << ratio(total_generated, total_steps)
                << " generated per step\n";
    for (auto& n : notes) std::cout << "\n- " << n;
    if (!notes.empty()) std::cout << "\n";
    return 0;
  };
});

}  // namespace
