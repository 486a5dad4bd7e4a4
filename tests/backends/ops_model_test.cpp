// The op table (ops_table.h, ops_cases.cpp) on the model: the GPU inside the
// compiled checkpoint runs every case, on its model shape (few rows, few
// threads), and its outcome must equal ptx-reference's on the same shape bit
// for bit, or be the model's documented refusal.  One test (label gpu).
//
// By default it leaves out the cases marked ModelRun::FullOnly (long
// floating-point sequences whose operations the other cases cover), to stay
// near a minute; QGPU_OPS_MODEL_FULL=1 runs every case:
//   QGPU_OPS_MODEL_FULL=1 build/bin/backends_ops_model_tests
// QGPU_OPS_MODEL_ONLY=TEXT runs the cases whose names contain TEXT;
// QGPU_OPS_MODEL_BACKEND=model-trace runs the same launches on model-trace
// (the tokens the model would write, without the model).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "ops_table.h"

namespace qgpu::opstable {
namespace {

TEST(BackendOpsModel, EveryCaseOnTheModel) {
  backends::BackendOptions opts;
  if (const char* dir = std::getenv("QGPU_MODEL_DIR")) opts.model_dir = dir;
  opts.progress = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  // QGPU_OPS_MODEL_BACKEND=model-trace: the same launches without the model
  // (the tokens the model would write, in a second).
  const char* which = std::getenv("QGPU_OPS_MODEL_BACKEND");
  auto model = backends::make_backend(which && *which ? which : "model", opts);
  auto ref = backends::make_backend("ptx-reference");
  std::map<std::string, double> seconds;
  uint64_t tokens = 0;
  const char* full_env = std::getenv("QGPU_OPS_MODEL_FULL");
  const bool full = full_env && std::string(full_env) == "1";
  size_t run = 0;
  const char* only = std::getenv("QGPU_OPS_MODEL_ONLY");
  for (const Case& c : cases()) {
    if (c.model_run == ModelRun::FullOnly && !full) continue;
    if (only && *only && c.name.find(only) == std::string::npos) continue;
    ++run;
    SCOPED_TRACE(c.name);
    const Outcome want = run_reference(*ref, c, c.model, seconds);
    const double before = seconds[model->name()];
    const Outcome got = check_backend(*model, c, c.model, want, seconds);
    tokens += got.generated_tokens;
    std::printf("%-40s rows %3u  prompt %6llu  generated %6llu  %7.2f s\n", c.name.c_str(), c.rows(c.model),
                static_cast<unsigned long long>(got.prompt_tokens),
                static_cast<unsigned long long>(got.generated_tokens), seconds[model->name()] - before);
    std::fflush(stdout);
  }
  std::printf("%llu generated tokens\n", static_cast<unsigned long long>(tokens));
  for (auto& [name, s] : seconds) std::printf("backend %-14s %8.2f s over %zu cases\n", name.c_str(), s, run);
}

}  // namespace
}  // namespace qgpu::opstable
