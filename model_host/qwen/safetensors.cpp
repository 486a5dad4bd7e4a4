#include "model_host/qwen/safetensors.h"

#include <nlohmann/json.hpp>

#include "model_host/qwen/checkpoint.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace qgpu::qwen::safetensors {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error("safetensors " + path + ": " + what);
}

torch::ScalarType dtype_from_name(const std::string& path, const std::string& tensor, const std::string& name) {
  if (name == "F32") return torch::kFloat32;
  if (name == "F16") return torch::kFloat16;
  if (name == "BF16") return torch::kBFloat16;
  fail(path, "tensor \"" + tensor + "\" has dtype " + name + " (expected F32, F16 or BF16)");
}

const char* dtype_name(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat32: return "F32";
    case torch::kFloat16: return "F16";
    case torch::kBFloat16: return "BF16";
    default: throw std::invalid_argument("safetensors: cannot write dtype " + std::string(c10::toString(t)));
  }
}

// A read-only memory map that unmaps itself.
struct Mapping {
  void* data = MAP_FAILED;
  size_t size = 0;
  Mapping(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
    struct stat st {};
    ::fstat(fd, &st);
    size = static_cast<size_t>(st.st_size);
    if (size > 0) data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (size > 0 && data == MAP_FAILED) fail(path, std::string("cannot map: ") + std::strerror(errno));
  }
  ~Mapping() {
    if (data != MAP_FAILED) ::munmap(data, size);
  }
  const uint8_t* bytes() const { return static_cast<const uint8_t*>(data); }
};

}  // namespace

void read(const std::string& path, const std::function<void(const std::string&, torch::Tensor)>& visit) {
  read(path, [&](const std::string& name, torch::Tensor t, torch::ScalarType) { visit(name, std::move(t)); });
}

void read(const std::string& path,
          const std::function<void(const std::string&, torch::Tensor, torch::ScalarType stored)>& visit) {
  Mapping map(path);
  if (map.size < 8) fail(path, "file is shorter than its 8-byte header length");
  uint64_t header_len = 0;
  std::memcpy(&header_len, map.bytes(), 8);
  if (header_len > map.size - 8) fail(path, "header length " + std::to_string(header_len) + " exceeds the file");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(map.bytes() + 8, map.bytes() + 8 + header_len);
  } catch (const std::exception& e) {
    fail(path, std::string("header is not JSON: ") + e.what());
  }
  const uint8_t* data = map.bytes() + 8 + header_len;
  const size_t data_size = map.size - 8 - header_len;
  for (auto& [name, info] : header.items()) {
    if (name == "__metadata__") continue;
    auto dtype = dtype_from_name(path, name, info.at("dtype").get<std::string>());
    auto shape = info.at("shape").get<std::vector<int64_t>>();
    auto offsets = info.at("data_offsets").get<std::vector<uint64_t>>();
    int64_t numel = 1;
    for (auto d : shape) numel *= d;
    const uint64_t expected = static_cast<uint64_t>(numel) * c10::elementSize(dtype);
    if (offsets.size() != 2 || offsets[1] < offsets[0] || offsets[1] > data_size ||
        offsets[1] - offsets[0] != expected)
      fail(path, "tensor \"" + name + "\" has data_offsets that do not match its shape and dtype");
    auto view = torch::from_blob(const_cast<uint8_t*>(data + offsets[0]), shape,
                                 torch::TensorOptions().dtype(dtype));
    visit(name, dtype == torch::kFloat32 ? view.clone() : view.to(torch::kFloat32), dtype);
  }
}

// Writes [p, p + bytes), pages never written (written_pages) as zeros without
// reading them: a compiled GPU's lazily zero-filled tensors span over 20 GB,
// of which reading every page would make every page resident.
static void write_data(std::ofstream& out, const char* p, size_t bytes) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  static const std::vector<char> zeros(page, 0);
  const std::vector<bool> written = written_pages(p, bytes);
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p), end = begin + bytes, first = begin / page * page;
  for (size_t i = 0; i < written.size(); ++i) {
    const uintptr_t lo = std::max(begin, first + i * page), hi = std::min(end, first + (i + 1) * page);
    out.write(written[i] ? reinterpret_cast<const char*>(lo) : zeros.data(), static_cast<std::streamsize>(hi - lo));
  }
}

int64_t element_bytes(torch::ScalarType dtype) {
  dtype_name(dtype);  // refuses a dtype the format does not store
  return static_cast<int64_t>(c10::elementSize(dtype));
}

void write(const std::string& path, const std::map<std::string, torch::Tensor>& tensors, torch::ScalarType dtype) {
  write(path, tensors, dtype, {});
}

void write(const std::string& path, const std::map<std::string, torch::Tensor>& tensors, torch::ScalarType dtype,
           const std::map<std::string, torch::ScalarType>& stored) {
  nlohmann::json header = nlohmann::json::object();
  header["__metadata__"] = {{"format", "pt"}};
  std::vector<torch::Tensor> converted;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    const auto own = stored.find(name);
    const torch::ScalarType d = own == stored.end() ? dtype : own->second;
    auto c = dense(t).detach().to(torch::kCPU).to(d).contiguous();  // a sparse t: its written pages only
    uint64_t bytes = static_cast<uint64_t>(c.numel()) * c.element_size();
    header[name] = {{"dtype", dtype_name(d)}, {"shape", c.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    converted.push_back(c);
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keep the data 8-byte aligned
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(path, "cannot create");
  uint64_t len = text.size();
  out.write(reinterpret_cast<const char*>(&len), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& c : converted)
    write_data(out, static_cast<const char*>(c.data_ptr()), static_cast<size_t>(c.numel() * c.element_size()));
  if (!out) fail(path, "write failed");
}

}  // namespace qgpu::qwen::safetensors
