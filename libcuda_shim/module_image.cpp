#include "module_image.h"

#include <cstdint>
#include <cstring>

#include "cubin_container.h"
#include "qgpu/fatbin.h"

namespace qgpu::driver {
namespace {

// The machine presents itself as compute capability 7.5: the PTX entry for
// it is the newest one not above sm_75.
constexpr uint32_t kDeviceArch = 75;

std::string ptx_of(const fatbin::Fatbin& f) {
  const fatbin::Entry* e = f.best_ptx(kDeviceArch);
  if (!e)
    throw DriverError(CUDA_ERROR_NO_BINARY_FOR_GPU,
                      "the fatbinary holds no PTX (only machine code for real GPUs); "
                      "build with -gencode ...,code=compute_XX to embed PTX");
  return e->payload;
}

}  // namespace

std::vector<std::string> ptx_modules(const void* image) {
  if (!image) throw DriverError(CUDA_ERROR_INVALID_VALUE, "image is NULL");
  if (auto ptx = rtc_cubin::unwrap(image)) return {std::string(*ptx)};

  uint32_t magic;
  std::memcpy(&magic, image, sizeof magic);
  try {
    if (magic == fatbin::kWrapperMagic) {
      std::vector<std::string> out;
      for (const fatbin::Fatbin& unit : fatbin::parse_wrapper(image).units) out.push_back(ptx_of(unit));
      if (out.empty())
        throw DriverError(CUDA_ERROR_NO_BINARY_FOR_GPU, "the fatbinary wrapper holds no PTX");
      return out;
    }
    if (magic == fatbin::kFatbinMagic)
      return {ptx_of(fatbin::parse(image, fatbin::declared_size(image)))};
  } catch (const fatbin::FatbinError& e) {
    throw DriverError(CUDA_ERROR_INVALID_IMAGE, std::string("malformed fatbinary: ") + e.what());
  }

  const char* text = static_cast<const char*>(image);
  if (std::memcmp(text, "\x7f" "ELF", 4) == 0)
    throw DriverError(CUDA_ERROR_INVALID_IMAGE,
                      "the image is an ELF cubin (machine code for a real GPU); qgpu runs PTX: "
                      "load PTX text, a fatbinary with PTX, or the CUBIN qgpu's NVRTC produced");
  std::string ptx(text);
  if (ptx.find(".version") == std::string::npos || ptx.find(".target") == std::string::npos)
    throw DriverError(CUDA_ERROR_INVALID_IMAGE,
                      "the image is neither PTX text (no .version/.target directives), "
                      "a fatbinary, nor a CUBIN from qgpu's NVRTC");
  return {ptx};
}

}  // namespace qgpu::driver
