// The op table (ops_table.h, ops_cases.cpp) on the model: the GPU inside the
// compiled checkpoint runs every case, on its model shape (few rows, few
// threads), and its outcome must equal ptx-reference's on the same shape bit
// for bit, or be the model's documented refusal.  One test (label gpu).
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
  auto model = backends::make_backend("model", opts);
  auto ref = backends::make_backend("ptx-reference");
  std::map<std::string, double> seconds;
  uint64_t tokens = 0;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const Outcome want = run_reference(*ref, c, c.model, seconds);
    const double before = seconds["model"];
    check_backend(*model, c, c.model, want, seconds);
    std::printf("%-40s rows %3u  %7.2f s\n", c.name.c_str(), c.rows(c.model), seconds["model"] - before);
    std::fflush(stdout);
  }
  (void)tokens;
  for (auto& [name, s] : seconds) std::printf("backend %-14s %8.2f s over %zu cases\n", name.c_str(), s, cases().size());
}

}  // namespace
}  // namespace qgpu::opstable
