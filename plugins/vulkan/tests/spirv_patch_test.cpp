// Writes every embedded shader as the plugin's patcher leaves it into the
// folder given: with DenormPreserve added (NAME.spv) and, for the modules
// that declare Float64, also without it (NAME.nodenorm.spv, lavapipe's
// case); spirv_patch_check.cmake validates them and checks the modes.
#include <cstdio>
#include <string>
#include <vector>

#include "vk_plugin.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  int written = 0;
  for (const auto& m : xhal_spirv::kModules) {
    const size_t words = m.bytes / 4;
    const bool f64 = xhal::vk::uses_float64(m.words, words);
    for (bool denorm : {true, false}) {
      if (!denorm && !f64) continue;  // unchanged: the module as embedded
      std::vector<uint32_t> out;
      if (!xhal::vk::patch_float_modes(m.words, words, denorm, &out)) {
        std::fprintf(stderr, "%s: not patched\n", m.name);
        return 1;
      }
      const size_t want = words + (denorm ? 6 : 0) + (f64 ? 8 : 0);
      if (out.size() != want) {
        std::fprintf(stderr, "%s: %zu words after the patch, expected %zu\n", m.name, out.size(),
                     want);
        return 1;
      }
      const std::string path =
          std::string(argv[1]) + "/" + m.name + (denorm ? "" : ".nodenorm") + ".spv";
      FILE* f = std::fopen(path.c_str(), "wb");
      if (!f) return 1;
      std::fwrite(out.data(), 4, out.size(), f);
      std::fclose(f);
      ++written;
    }
  }
  std::printf("%d modules patched\n", written);
  return 0;
}
