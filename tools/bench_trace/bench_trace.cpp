// bench_trace: the sparse executor's decode speed on real launches.
//
// Replays token dumps (`qgpu run --backend model-trace --dump-tokens FILE`,
// one line per launch: the prompt's ids, " | ", the generated ids, and one
// per copy to the device: its write records, " | ", nothing) through a
// compiled model: the prompt is prefilled, then every generated token is
// decoded with step_argmax, and each argmax must be the next token of the
// dump (the model writes exactly what the trace says, or the run fails).
// Decode time is reported per file, with the sublayer memo as shipped and,
// with --baseline-memo, a second configuration alternated in the same
// process, so that the ratio is measured on one machine at one time.
// --results FILE writes the table with the machine's description.
#include "model_host/qwen/checkpoint.h"
#include "model_host/qwen/model.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

using namespace qgpu;

namespace {

struct Launch {
  std::vector<int64_t> prompt, generated;
};

std::vector<Launch> read_dump(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("bench_trace: cannot read " + path);
  std::vector<Launch> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    Launch l;
    std::istringstream s(line);
    std::string w;
    bool after = false;
    while (s >> w) {
      if (w == "|") {
        after = true;
        continue;
      }
      (after ? l.generated : l.prompt).push_back(std::stoll(w));
    }
    if (!after) throw std::runtime_error("bench_trace: " + path + ": a line without ' | '");
    out.push_back(std::move(l));
  }
  return out;
}

// A directory's last component (the results file is committed; the path
// of the machine that wrote it means nothing elsewhere).
std::string last_component(const std::string& dir) {
  std::filesystem::path p(dir);
  if (!p.has_filename()) p = p.parent_path();
  return p.filename().string();
}

double cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Decode CPU seconds over the file (prefill excluded); throws at the first
// token the model does not write.  One state holds the client's whole
// sequence, as in model_host: every prompt and write record (a line with no
// generated ids), every generated token, END included.
double replay(const qwen::Model& model, const std::vector<Launch>& launches, const std::string& name,
              int64_t& decoded) {
  double decode = 0;
  decoded = 0;
  qwen::State st = model.new_state();
  for (size_t li = 0; li < launches.size(); ++li) {
    const Launch& l = launches[li];
    int64_t next = -1;
    for (size_t i = 0; i < l.prompt.size(); i += 256)  // model_host's prefill chunks
      next = model.forward_argmax(st, {l.prompt.begin() + i, l.prompt.begin() + std::min(i + 256, l.prompt.size())});
    const double t0 = cpu_s();
    for (size_t i = 0; i < l.generated.size(); ++i) {
      if (next != l.generated[i])
        throw std::runtime_error("bench_trace: " + name + " line " + std::to_string(li + 1) + ": generated token " +
                                 std::to_string(i) + " is " + std::to_string(next) + ", the trace has " +
                                 std::to_string(l.generated[i]));
      next = model.step_argmax(st, l.generated[i]);
      ++decoded;
    }
    decode += cpu_s() - t0;
  }
  return decode;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Decode speed of the sparse executor on token dumps of real launches, each token checked"};
  std::string model_dir;
  std::vector<std::string> files;
  size_t memo = qwen::Model::kMemoEntries;
  long baseline_memo = -1;
  int repeat = 2;
  std::string results;
  app.add_option("--model-dir", model_dir, "compiled model directory (qgpu build-model --compact)")->required();
  app.add_option("--memo", memo, "sublayer memo entries (0: off)");
  app.add_option("--baseline-memo", baseline_memo, "also run with this many memo entries, alternated; print the ratio");
  app.add_option("--repeat", repeat, "rounds; the least CPU time of each is reported")->check(CLI::Range(1, 100));
  app.add_option("--results", results, "also write the table, with the machine, to this markdown file");
  app.add_option("files", files, "token dumps (qgpu run --backend model-trace --dump-tokens FILE)")->required();
  CLI11_PARSE(app, argc, argv);

  at::set_num_threads(1);
  qwen::Model model(qwen::Checkpoint::load(model_dir, qwen::Storage::Sparse), qwen::Exec::Sparse);
  struct Row {
    std::string name;
    std::vector<Launch> launches;
    int64_t decoded = 0;
    double best = 1e300, base = 1e300;
  };
  std::vector<Row> rows;
  for (const std::string& f : files) rows.push_back({f.substr(f.find_last_of('/') + 1), read_dump(f)});
  for (int r = 0; r < repeat; ++r)
    for (Row& row : rows) {
      for (int pass = 0; pass < (baseline_memo >= 0 ? 2 : 1); ++pass) {
        model.set_memo_entries(pass == 0 ? memo : static_cast<size_t>(baseline_memo));
        model.clear_memo();
        const double s = replay(model, row.launches, row.name, row.decoded);
        (pass == 0 ? row.best : row.base) = std::min(pass == 0 ? row.best : row.base, s);
      }
    }
  std::ostringstream table;  // markdown
  table << std::fixed << std::setprecision(1) << "| dump | decoded tokens | tok/CPU-s (memo " << memo << ")"
        << (baseline_memo >= 0 ? " | tok/CPU-s (memo " + std::to_string(baseline_memo) + ") | ratio" : "")
        << " |\n| --- | ---: | ---: |" << (baseline_memo >= 0 ? " ---: | ---: |" : "") << "\n";
  std::cout << std::fixed << std::setprecision(1);
  double total = 0, total_base = 0;
  int64_t tokens = 0;
  auto line = [&](const std::string& name, int64_t n, double best, double base) {
    std::cout << std::left << std::setw(24) << name << std::right << std::setw(9) << n << " tokens " << std::setw(9)
              << n / best << " tok/CPU-s";
    table << "| " << name << " | " << n << " | " << n / best;
    if (baseline_memo >= 0) {
      std::cout << "  baseline " << std::setw(9) << n / base << "  ratio " << std::setprecision(2) << base / best
                << std::setprecision(1);
      table << " | " << n / base << " | " << std::setprecision(2) << base / best << std::setprecision(1);
    }
    std::cout << "\n";
    table << " |\n";
  };
  for (const Row& row : rows) {
    line(row.name, row.decoded, row.best, row.base);
    total += row.best;
    total_base += row.base;
    tokens += row.decoded;
  }
  line("all", tokens, total, total_base);
  const qwen::Model::MemoStats m = model.memo_stats();  // of the last file's last run
  std::cout << "memo (the last replay): " << m.hits << " steps from the memo, " << m.misses << " computed\n";
  if (!results.empty()) {
    std::ofstream out(results);
    const std::time_t now = std::time(nullptr);
    char date[64];
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    std::string cpu = "unknown CPU";
    std::ifstream info("/proc/cpuinfo");
    for (std::string l; std::getline(info, l);)
      if (l.rfind("model name", 0) == 0) {
        cpu = l.substr(l.find(':') + 2);
        break;
      }
    out << "# Decode speed on token dumps of real launches\n\nWritten by `tools/bench_trace` (" << date
        << "): " << cpu << ", " << std::thread::hardware_concurrency() << " hardware threads; model "
        << last_component(model_dir)
        << "; one thread; the least CPU time of " << repeat
        << " rounds per dump (prefill excluded, every token checked against the dump).\n\n"
        << table.str();
    std::cout << "bench_trace: wrote " << results << "\n";
  }
  return 0;
}
