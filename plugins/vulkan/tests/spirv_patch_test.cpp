// Writes every embedded shader with DenormPreserve added by the plugin's
// patcher into the folder given; spirv_patch_check.cmake validates them.
#include <cstdio>
#include <string>
#include <vector>

#include "vk_plugin.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  int written = 0;
  for (const auto& m : xhal_spirv::kModules) {
    std::vector<uint32_t> out;
    if (!xhal::vk::add_denorm_preserve(m.words, m.bytes / 4, &out)) {
      std::fprintf(stderr, "%s: not patched\n", m.name);
      return 1;
    }
    if (out.size() != m.bytes / 4 + 6) {
      std::fprintf(stderr, "%s: %zu words after the patch, expected %zu\n", m.name, out.size(),
                   m.bytes / 4 + 6);
      return 1;
    }
    const std::string path = std::string(argv[1]) + "/" + m.name + ".spv";
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return 1;
    std::fwrite(out.data(), 4, out.size(), f);
    std::fclose(f);
    ++written;
  }
  std::printf("%d modules patched\n", written);
  return 0;
}
