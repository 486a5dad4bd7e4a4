// The machine of docs/tokens.md as a circuit Program, and its compilation.
//
// machine_program() declares it in stages, in depth order (the compiler
// places each op at the first layer its inputs allow), each a function in
// its own file with the type it hands on (builder.h lists them):
//   1. context.h: one-row memories keep what earlier tokens said (current
//      block, thread, CTA, barrier epoch, launch shape, the ROM row being
//      loaded, the previous token), and which pass this is;
//   2. rom.h: five 1024-row stores (instruction, operands a/b/c, terminator);
//   3. registers.h: three read ports over the 8192-row register file
//      (thread x register), all written by the value tokens;
//   4. alu.h: operands, addresses, data memories (global, shared, local,
//      param, print), the ALU;
//   5. scheduler.h: the thread table (scheduler state), the warp groups'
//      running minimum and release pcs of `wbar` (WMIN tokens);
//   6. output.h: the decision of what to write next, and the output head.
#include "model_host/machine_circuit/circuit.h"
#include "model_host/machine_circuit/layout_format.h"

#include "model_host/circuit/compiler.h"
#include "model_host/machine_circuit/alu.h"
#include "model_host/machine_circuit/builder.h"
#include "model_host/machine_circuit/context.h"
#include "model_host/machine_circuit/output.h"
#include "model_host/machine_circuit/registers.h"
#include "model_host/machine_circuit/rom.h"
#include "model_host/machine_circuit/scheduler.h"
#include "model_host/tokens/vocab.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

namespace qgpu::gpu {

using circuit::ValueId;

const circuit::MemoryLayout& Layout::memory(const std::string& name) const {
  for (const auto& m : memories)
    if (m.name == name) return m;
  throw std::runtime_error("gpu layout: no memory '" + name + "'");
}

std::string Layout::to_json() const {
  nlohmann::json j;
  j["format"] = kLayoutFormat;
  j["num_layers"] = num_layers;
  j["vocab_size"] = vocab_size;
  if (!circuit.empty()) j["circuit"] = circuit;
  j["memories"] = nlohmann::json::array();
  for (const auto& m : memories) {
    nlohmann::json heads = nlohmann::json::array(), parts = nlohmann::json::array();
    for (const auto& h : m.heads) heads.push_back({h.layer, h.head});
    for (const auto& pt : m.parts) parts.push_back({pt.slice, pt.channel, pt.size});
    j["memories"].push_back({{"name", m.name}, {"rows", m.rows}, {"zero_default", m.zero_default},
                             {"group_rows", m.group_rows}, {"groups", m.groups}, {"slices", m.slices},
                             {"heads", heads}, {"parts", parts}});
  }
  return j.dump(1);
}

Layout Layout::from_json(const std::string& text) {
  try {
    auto j = nlohmann::json::parse(text);
    if (j.at("format") != kLayoutFormat) throw std::runtime_error("unknown format");
    Layout l;
    l.num_layers = j.at("num_layers");
    l.vocab_size = j.at("vocab_size");
    l.circuit = j.value("circuit", std::string());
    for (const auto& m : j.at("memories")) {
      circuit::MemoryLayout ml;
      ml.name = m.at("name");
      ml.rows = m.at("rows");
      ml.zero_default = m.at("zero_default");
      ml.group_rows = m.at("group_rows");
      ml.groups = m.at("groups");
      ml.slices = m.at("slices");
      for (const auto& h : m.at("heads")) ml.heads.push_back({h.at(0).get<int>(), h.at(1).get<int>()});
      for (const auto& pt : m.at("parts"))
        ml.parts.push_back({pt.at(0).get<int>(), pt.at(1).get<int>(), pt.at(2).get<int>()});
      l.memories.push_back(std::move(ml));
    }
    return l;
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("gpu layout: malformed qgpu-gpu.json: ") + e.what());
  }
}

namespace {

struct MachineProgram {
  circuit::Program program;
  std::vector<std::string> readable;   // memories the host reads back
};

MachineProgram machine_program() {
  mc::Builder b;
  mc::declare_tokens(b);
  const mc::Context context = mc::context_stage(b);
  const mc::Rom rom = mc::rom_stage(b, context);
  const mc::Registers registers = mc::registers_stage(b, context, rom);
  const mc::Alu alu = mc::alu_stage(b, context, rom, registers);
  const mc::Schedule schedule = mc::scheduler_stage(b, context, rom, registers);
  mc::output_stage(b, context, rom, alu, schedule);
  return {std::move(b.p), {"global", "print"}};
}

}  // namespace

circuit::Program machine_circuit() { return machine_program().program; }

Built build(const std::function<void(const std::string&)>& progress) {
  auto say = [&](const std::string& s) {
    if (progress) progress(s);
  };
  say("declaring the machine circuit");
  MachineProgram mp = machine_program();
  say("compiling " + std::to_string(mp.program.ops().size()) + " ops over " +
      std::to_string(mp.program.tokens().size()) + " tokens");
  circuit::Options opt;
  opt.token_base = kTokenBase;
  opt.vocab_size = kTokenBase + circuit_token_count();
  opt.free_dims = kFreeResidualDims;
  circuit::Compiled c = circuit::compile(mp.program, opt);
  Built out;
  out.report = c.report();
  out.layout.num_layers = c.num_layers();
  out.layout.vocab_size = opt.vocab_size;
  for (const std::string& name : mp.readable) out.layout.memories.push_back(c.memory_layout(name));
  {
    const auto& values = mp.program.values();
    ValueId v = -1;
    for (size_t i = 0; i < values.size(); ++i)
      if (values[i].name == "mul.l0") v = ValueId(i);
    if (v < 0) throw std::logic_error("gpu: the multiplier's digit 'mul.l0' is missing");
    const int layer = c.depths().at(v) / 2;
    AluWeight& w = out.alu_weight;
    w.tensor = "layers." + std::to_string(layer) + ".mlp.down_proj.weight";
    w.row = c.dims(v).at(4);
    const torch::Tensor down = c.checkpoint().tensors.at(w.tensor);
    const torch::Tensor nz = down[w.row].nonzero();
    if (nz.size(0) == 0) throw std::logic_error("gpu: no unit writes slot 4 of 'mul.l0'");
    w.col = nz[0][0].item<int64_t>();
    w.value = down[w.row][w.col].item<float>();
  }
  say("compiled: " + std::to_string(c.num_layers()) + " layers");
  out.checkpoint = c.take_checkpoint();
  return out;
}

std::vector<uint32_t> read_words(const Layout& layout, const qwen::Model& model, const qwen::State& state,
                                 const std::string& name, uint32_t count, uint32_t first) {
  const circuit::MemoryLayout& m = layout.memory(name);
  if (first > uint32_t(m.rows) || count > uint32_t(m.rows) - first)
    throw std::runtime_error("gpu: memory '" + name + "' has only " + std::to_string(m.rows) + " words");
  auto layer_state = [&](int layer) { return model.recurrent_state(state, layer); };
  std::vector<uint32_t> words(count, 0);
  for (uint32_t w = 0; w < count; ++w) {
    const std::vector<int> nibbles = m.read(int(first + w), layer_state);
    for (size_t i = 0; i < nibbles.size(); ++i) {
      if (nibbles[i] < 0)
        throw std::runtime_error("gpu: memory '" + name + "' word " + std::to_string(first + w) +
                                 " does not hold a clean code in the model's state");
      words[w] |= uint32_t(nibbles[i]) << (4 * i);
    }
  }
  return words;
}

}  // namespace qgpu::gpu
