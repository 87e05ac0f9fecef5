// Plugin search over folders holding things that are not plugins: a FIFO
// (dlopen would block for ever), a symlink loop, a dangling symlink, a
// directory, an unreadable folder. Each is a rejected candidate with the
// reason; none is opened; the good plugin beside them loads.
#include <gmock/gmock.h>

#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "test_support.h"

namespace xhal::test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A fresh folder under the temp dir, removed (with everything in it) at the end.
class TempFolder {
 public:
  TempFolder() {
    std::string pattern = (fs::temp_directory_path() / "xhal-search-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp: " << std::strerror(errno);
    path_ = pattern;
    chmod(path_.c_str(), 0755);  // readable by the unprivileged child below
  }
  ~TempFolder() {
    std::error_code ec;
    for (const auto& entry : fs::recursive_directory_iterator(path_, ec)) {
      if (entry.is_directory(ec)) chmod(entry.path().c_str(), 0755);
    }
    fs::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

std::string good_plugin() { return fake_dir("faulty") + "/libxhal-good.so"; }

class SearchTest : public RuntimeTest {
 protected:
  void SetUp() override {
    fs::create_symlink(good_plugin(), folder_ / "libxhal-good.so");
    ASSERT_EQ(mkfifo((folder_ / "libxhal-fifo.so").c_str(), 0644), 0) << std::strerror(errno);
    fs::create_symlink(folder_ / "libxhal-loop.so", folder_ / "libxhal-loop.so");
    fs::create_symlink(folder_ / "no-such-file", folder_ / "libxhal-gone.so");
    fs::create_directory(folder_ / "libxhal-dir.so");
  }
  TempFolder folder_;
};

TEST_F(SearchTest, NonRegularFilesInAFolderAreRejectedWithoutBeingOpened) {
  // With the FIFO opened, this start would never return (ctest's timeout).
  ASSERT_EQ(start(folder_.str()), XHAL_OK) << xhal_last_error();
  const PluginView fifo = plugin("fifo");
  EXPECT_EQ(fifo.state, XHAL_PLUGIN_REJECTED);
  EXPECT_EQ(fifo.reason, "not a regular file (fifo)");
  const PluginView dir = plugin("dir");
  EXPECT_EQ(dir.state, XHAL_PLUGIN_REJECTED);
  EXPECT_EQ(dir.reason, "not a regular file (directory)");
  const PluginView loop = plugin("loop");
  EXPECT_EQ(loop.state, XHAL_PLUGIN_REJECTED);
  EXPECT_EQ(loop.reason, "symlink loop (Too many levels of symbolic links)");
  const PluginView gone = plugin("gone");
  EXPECT_EQ(gone.state, XHAL_PLUGIN_REJECTED);
  EXPECT_EQ(gone.reason, "dangling symlink (its target does not exist)");

  const PluginView good = plugin("good");
  ASSERT_EQ(good.state, XHAL_PLUGIN_LOADED) << good.reason;
  xhal_device_t dev = nullptr;
  ASSERT_EQ(xhal_device_open("good:1", &dev), XHAL_OK) << xhal_last_error();
  xhal_buffer_t buf = nullptr;
  ASSERT_EQ(xhal_buffer_allocate(dev, 8, &buf), XHAL_OK) << xhal_last_error();
  const uint8_t in[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  uint8_t out[8] = {};
  EXPECT_EQ(xhal_buffer_write(buf, 0, in, 8), XHAL_OK);
  EXPECT_EQ(xhal_buffer_read(buf, 0, out, 8), XHAL_OK);
  EXPECT_EQ(std::memcmp(in, out, 8), 0);
  EXPECT_EQ(xhal_buffer_release(buf), XHAL_OK);
  EXPECT_EQ(xhal_device_release(dev), XHAL_OK);
}

TEST_F(SearchTest, PathEntriesNamingAFifoOrALoopSayWhat) {
  const std::string path =
      folder_ / "libxhal-fifo.so" + ":" + (folder_ / "libxhal-loop.so") + ":" + good_plugin();
  ASSERT_EQ(start(path), XHAL_OK) << xhal_last_error();
  const std::vector<PluginView> ps = plugins();
  ASSERT_EQ(ps.size(), 3u);
  EXPECT_EQ(ps[0].reason, "not a regular file (fifo)");
  EXPECT_EQ(ps[1].reason, "symlink loop (Too many levels of symbolic links)");
  EXPECT_NE(ps[1].reason, "plugin path entry does not exist");
  EXPECT_EQ(ps[2].state, XHAL_PLUGIN_LOADED) << ps[2].reason;
}

// What the runtime says about `locked` (mode 000) and the good plugin after
// it, seen by an unprivileged process: root reads any folder, so as root
// the check runs in a child that drops to nobody. Returns
// "<locked reason>\n<good state>" or "SKIP: why".
std::string reasons_seen_without_privileges(const std::string& locked) {
  int out[2];
  if (pipe(out) != 0) return "SKIP: pipe failed";
  const pid_t child = fork();
  if (child == 0) {
    close(out[0]);
    auto reply = [&](const std::string& text) {
      (void)!write(out[1], text.data(), text.size());
      _exit(0);
    };
    if (geteuid() == 0 && (setgroups(0, nullptr) != 0 || setresgid(65534, 65534, 65534) != 0 ||
                           setresuid(65534, 65534, 65534) != 0)) {
      reply(std::string("SKIP: cannot drop root privileges: ") + std::strerror(errno));
    }
    if (access(locked.c_str(), R_OK) == 0) reply("SKIP: the locked folder is still readable");
    if (start(locked + ":" + good_plugin()) != XHAL_OK) reply(xhal_last_error());
    std::string text;
    for (const PluginView& p : plugins()) {
      if (p.path == locked) text += p.reason + "\n";
    }
    text += plugin("good").state == XHAL_PLUGIN_LOADED ? "good loaded" : "good not loaded";
    xhal_runtime_shutdown();
    reply(text);
  }
  close(out[1]);
  std::string text;
  char chunk[256];
  ssize_t n;
  while ((n = read(out[0], chunk, sizeof(chunk))) > 0) text.append(chunk, static_cast<size_t>(n));
  close(out[0]);
  int status = 0;
  waitpid(child, &status, 0);
  return text;
}

TEST(SearchUnreadableFolder, IsReportedWithTheErrorAndTheRestLoads) {
  TempFolder top;
  const std::string locked = top / "locked";
  fs::create_directory(locked);
  fs::copy_file(good_plugin(), locked + "/libxhal-hidden.so");
  ASSERT_EQ(chmod(locked.c_str(), 0), 0);
  const std::string seen = reasons_seen_without_privileges(locked);
  if (seen.starts_with("SKIP: ")) GTEST_SKIP() << seen.substr(6);
  EXPECT_EQ(seen, "plugin folder cannot be read: Permission denied\ngood loaded");
}

}  // namespace
}  // namespace xhal::test
