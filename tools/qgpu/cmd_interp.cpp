// qgpu interp FILE --kernel NAME [--grid X,Y,Z] [--block X,Y,Z] [--arg SPEC]... [--trace]
// Runs one kernel launch on the reference interpreter.  Argument specs, in
// the order of the kernel's parameters:
//   u32:V s32:V u64:V s64:V u16:V u8:V   a scalar
//   buf:N                                a zeroed buffer of N bytes (its pointer)
//   u32[]:A,B,C  u64[]:...  u8[]:...     a buffer holding those values
// After the launch every buffer argument is printed, word by word.
#include <cstring>
#include <iomanip>
#include <iostream>

#include "cmd_machine.h"
#include "command.h"
#include "model_host/machine/interpreter.h"
#include "model_host/lower/lower.h"
#include "model_host/machine/printf.h"
#include "model_host/ptx/layout.h"

namespace {

using namespace qgpu::machine;

struct Buffer {
  size_t arg;
  uint64_t addr;
  uint32_t bytes, elem;
};

uint32_t elem_size(const std::string& t) {
  if (t == "u8" || t == "s8") return 1;
  if (t == "u16" || t == "s16") return 2;
  if (t == "u32" || t == "s32") return 4;
  if (t == "u64" || t == "s64") return 8;
  throw std::invalid_argument("unknown element type `" + t + "`");
}

void print_step(const StepRecord& r) {
  std::cout << "EXEC cta " << r.cta << " warp " << r.warp << " B" << r.block << " mask 0x" << std::hex << r.mask
            << std::dec;
  for (auto& w : r.regs) std::cout << " l" << w.lane << ".r" << w.reg << "=" << w.value;
  for (auto& m : r.mem)
    std::cout << " " << space_name(m.space) << "[0x" << std::hex << m.addr << std::dec << "]:" << m.bytes * 8 << "="
              << m.value;
  std::cout << "\n";
}

qgpu::cli::Register reg("interp", [](CLI::App& app) {
  auto* sub = app.add_subcommand("interp", "Run one kernel launch on the machine's reference interpreter");
  auto opt = std::make_shared<cli::LaunchOptions>();
  auto args = std::make_shared<std::vector<std::string>>();
  auto trace = std::make_shared<bool>(false);
  cli::add_launch_options(sub, *opt);
  sub->add_option("--arg,-a", *args, "kernel argument, in parameter order (see `qgpu interp --help`)");
  sub->add_flag("--trace", *trace, "print every EXEC: block, warp, active lanes, registers and memory written");
  return [opt, args, trace]() {
    Params p = opt->params();
    ModuleImage img = load_module(ptx_of_file(opt->file), p);
    auto idx = img.module.function_index(opt->kernel);
    if (opt->kernel.empty() || !idx) throw std::invalid_argument("--kernel must name a kernel of the module");
    auto layout = qgpu::ptx::param_layout(img.module.functions[*idx]);
    if (args->size() != layout.size())
      throw std::invalid_argument("the kernel takes " + std::to_string(layout.size()) + " arguments; " +
                                  std::to_string(args->size()) + " given");
    std::vector<uint8_t> params;
    std::vector<Buffer> buffers;
    for (size_t i = 0; i < layout.size(); ++i) {
      const std::string& a = (*args)[i];
      size_t colon = a.find(':');
      if (colon == std::string::npos) throw std::invalid_argument("argument `" + a + "`: expected TYPE:VALUE");
      std::string type = a.substr(0, colon), val = a.substr(colon + 1);
      uint64_t v = 0;
      if (type == "buf" || type.ends_with("[]")) {
        uint32_t es = type == "buf" ? 4 : elem_size(type.substr(0, type.size() - 2));
        std::vector<uint64_t> vals;
        uint32_t bytes;
        if (type == "buf") {
          bytes = uint32_t(std::stoul(val));
        } else {
          for (size_t at = 0; at < val.size();) {
            size_t c = val.find(',', at);
            vals.push_back(std::stoull(val.substr(at, c - at), nullptr, 0));
            at = c == std::string::npos ? val.size() : c + 1;
          }
          bytes = uint32_t(vals.size()) * es;
        }
        v = img.alloc(bytes);
        for (size_t k = 0; k < vals.size(); ++k) std::memcpy(&img.mem.bytes[v - img.mem.base + k * es], &vals[k], es);
        buffers.push_back({i, v, bytes, es});
      } else {
        elem_size(type);
        v = std::stoull(val, nullptr, 0);
      }
      params.resize(std::max<size_t>(params.size(), layout[i].offset + layout[i].size));
      std::memcpy(&params[layout[i].offset], &v, std::min<uint32_t>(layout[i].size, 8));
    }
    LaunchShape shape{opt->grid_dim(), opt->block_dim(), opt->dynamic_smem, img.symbols};
    Program prog = lower(img.module, opt->kernel, shape, p);
    Interpreter in(prog, p, prog.ctas, prog.threads, params, img.mem);
    StepRecord rec;
    while (in.step(&rec))
      if (*trace) print_step(rec);
    std::cout << format_prints(in.print_buffer(), img.mem);
    for (auto& b : buffers) {
      std::cout << "arg " << b.arg << ":";
      for (uint32_t k = 0; k < b.bytes / b.elem; ++k) {
        uint64_t v = 0;
        std::memcpy(&v, &img.mem.bytes[b.addr - img.mem.base + k * b.elem], b.elem);
        std::cout << " " << v;
      }
      std::cout << "\n";
    }
    const auto& st = in.stats();
    std::cout << "steps " << st.steps << ", instructions " << st.instructions << ", lane instructions "
              << st.lane_instructions << ", blocks " << prog.blocks.size() << "\n";
    if (in.fault().error) {
      std::cout << "fault: cudaError " << in.fault().error << ": " << in.fault().message << "\n";
      return 1;
    }
    return 0;
  };
});

}  // namespace
