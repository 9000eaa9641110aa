// The compilation cache's files: keys, the entry format, atomic writes and
// eviction.
//
// Note [Compilation cache]: `dlc run` and `dlc build` (executables and
// libraries for the CPU) look their result up under a key of everything
// that decides it: the contents and paths of the program's source files
// (the file and every module it imports, as sema read them), the command
// (run, exe, lib and the library's name), the -O level, the host CPU and
// the compiler's identity (CompilerIdentity). An entry is one file,
// KEY.entry, in the cache folder:
//
//   delta-cache-entry 1 CHECKSUM\n      (BLAKE3 of the rest, hex)
//   NAME\nSIZE\nBYTES                   (per file)
//
// Writers write a temporary file in the same folder and rename it over the
// entry, so concurrent dlc processes see either no entry or a whole one;
// two writers of one key write equivalent entries and the last rename
// wins. A reader that finds a bad
// checksum removes the entry and compiles as on a miss. A hit sets the
// entry's modification time to now; after each store, entries are removed
// oldest first until the folder holds at most the size bound
// (kDefaultCacheMaxBytes, or DELTA_CACHE_MAX_MB), and temporary files left
// by a killed writer are removed after an hour.
#include "compiler/driver/compile_cache.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/Support/Chrono.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/Process.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>

#include <algorithm>
#include <chrono>

namespace delta::driver {
namespace {

constexpr llvm::StringLiteral kMagic = "delta-cache-entry 1 ";
constexpr llvm::StringLiteral kEntrySuffix = ".entry";
constexpr llvm::StringLiteral kTempPrefix = "tmp-";

std::string Checksum(llvm::StringRef body) {
  return llvm::toHex(llvm::BLAKE3::hash(llvm::arrayRefFromStringRef(body)),
                     /*LowerCase=*/true);
}

// The entry's files from `text`, or nothing if it is not a whole entry.
std::optional<CacheEntry> Parse(llvm::StringRef text) {
  if (!text.consume_front(kMagic)) return std::nullopt;
  auto [checksum, body] = text.split('\n');
  if (checksum != Checksum(body)) return std::nullopt;
  CacheEntry entry;
  while (!body.empty()) {
    auto [name, rest] = body.split('\n');
    auto [size_text, bytes] = rest.split('\n');
    size_t size = 0;
    if (size_text.getAsInteger(10, size) || size > bytes.size())
      return std::nullopt;
    entry.files.emplace_back(name.str(), bytes.take_front(size).str());
    body = bytes.drop_front(size);
  }
  return entry;
}

std::string Serialize(const CacheEntry& entry) {
  std::string body;
  for (const auto& [name, bytes] : entry.files)
    body += name + "\n" + std::to_string(bytes.size()) + "\n" + bytes;
  return (kMagic + Checksum(body) + "\n" + body).str();
}

}  // namespace

void CacheKey::Add(llvm::StringRef part) {
  std::string length = std::to_string(part.size()) + ":";
  hasher_.update(length);
  hasher_.update(part);
}

std::string CacheKey::Hex() {
  return llvm::toHex(hasher_.final(), /*LowerCase=*/true);
}

const std::string* CacheEntry::Find(llvm::StringRef name) const {
  for (const auto& file : files)
    if (file.first == name) return &file.second;
  return nullptr;
}

std::string CompileCache::PathOf(llvm::StringRef key) const {
  llvm::SmallString<256> path(dir_);
  llvm::sys::path::append(path, key + kEntrySuffix);
  return path.str().str();
}

std::optional<CacheEntry> CompileCache::Load(llvm::StringRef key) const {
  if (!enabled()) return std::nullopt;
  std::string path = PathOf(key);
  int fd = -1;
  if (llvm::sys::fs::openFileForRead(path, fd)) return std::nullopt;
  auto buffer = llvm::MemoryBuffer::getOpenFile(
      llvm::sys::fs::convertFDToNativeFile(fd), path, -1);
  std::optional<CacheEntry> entry;
  if (buffer) entry = Parse((*buffer)->getBuffer());
  if (entry) {
    // Recently used: evicted last.
    (void)llvm::sys::fs::setLastAccessAndModificationTime(
        fd, std::chrono::system_clock::now());
  }
  llvm::sys::Process::SafelyCloseFileDescriptor(fd);
  if (!entry) llvm::sys::fs::remove(path);
  return entry;
}

void CompileCache::Store(llvm::StringRef key, const CacheEntry& entry) const {
  if (!enabled() || llvm::sys::fs::create_directories(dir_)) return;
  llvm::SmallString<256> model(dir_);
  llvm::sys::path::append(model, kTempPrefix + "%%%%%%%%%%%%");
  int fd = -1;
  llvm::SmallString<256> temp;
  if (llvm::sys::fs::createUniqueFile(model, fd, temp)) return;
  bool written = false;
  {
    llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
    out << Serialize(entry);
    out.close();
    written = !out.has_error();
    out.clear_error();
  }
  if (!written || llvm::sys::fs::rename(temp, PathOf(key))) {
    llvm::sys::fs::remove(temp);
    return;
  }
  Evict();
}

void CompileCache::Evict() const {
  struct File {
    std::string path;
    uint64_t size;
    llvm::sys::TimePoint<> modified;
  };
  std::vector<File> entries;
  uint64_t total = 0;
  auto now = std::chrono::system_clock::now();
  std::error_code error;
  for (llvm::sys::fs::directory_iterator it(dir_, error), end;
       !error && it != end; it.increment(error)) {
    llvm::sys::fs::file_status status;
    if (llvm::sys::fs::status(it->path(), status)) continue;
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    if (name.starts_with(kTempPrefix)) {
      if (now - status.getLastModificationTime() > std::chrono::hours(1))
        llvm::sys::fs::remove(it->path());
      continue;
    }
    if (!name.ends_with(kEntrySuffix)) continue;
    entries.push_back(
        {it->path(), status.getSize(), status.getLastModificationTime()});
    total += status.getSize();
  }
  if (total <= max_bytes_) return;
  std::sort(entries.begin(), entries.end(), [](const File& a, const File& b) {
    return a.modified < b.modified;
  });
  for (const File& file : entries) {
    if (total <= max_bytes_) break;
    if (!llvm::sys::fs::remove(file.path)) total -= file.size;
  }
}

std::string DefaultCacheDir() {
  llvm::SmallString<256> dir;
  // The XDG spec has relative paths ignored.
  if (std::optional<std::string> xdg =
          llvm::sys::Process::GetEnv("XDG_CACHE_HOME");
      xdg && llvm::sys::path::is_absolute(*xdg)) {
    dir = *xdg;
  } else if (llvm::sys::path::home_directory(dir)) {
    llvm::sys::path::append(dir, ".cache");
  } else {
    return "";
  }
  llvm::sys::path::append(dir, "delta");
  return dir.str().str();
}

uint64_t CacheMaxBytes() {
  uint64_t megabytes = 0;
  if (std::optional<std::string> text =
          llvm::sys::Process::GetEnv("DELTA_CACHE_MAX_MB");
      text && !llvm::StringRef(*text).getAsInteger(10, megabytes))
    return megabytes << 20;
  return kDefaultCacheMaxBytes;
}

std::string CompilationKey(const llvm::SourceMgr& sources,
                           llvm::ArrayRef<std::string> settings) {
  CacheKey key;
  key.Add(CompilerIdentity());
  // The code is for this machine's CPU (codegen/llvm/target.h), and a
  // cache folder may be shared with other machines.
  key.Add(llvm::sys::getProcessTriple());
  key.Add(llvm::sys::getHostCPUName());
  std::vector<std::string> features;
  for (const auto& feature : llvm::sys::getHostCPUFeatures())
    features.push_back((feature.second ? "+" : "-") + feature.first().str());
  std::sort(features.begin(), features.end());  // a StringMap's order
  for (const std::string& feature : features) key.Add(feature);
  for (const std::string& setting : settings) key.Add(setting);
  for (unsigned id = 1; id <= sources.getNumBuffers(); ++id) {
    const llvm::MemoryBuffer* buffer = sources.getMemoryBuffer(id);
    key.Add(buffer->getBufferIdentifier());
    key.Add(buffer->getBuffer());
  }
  return key.Hex();
}

std::optional<CacheEntry> ReadEntryFiles(
    const std::vector<std::string>& paths) {
  CacheEntry entry;
  for (const std::string& path : paths) {
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer) return std::nullopt;
    entry.files.emplace_back(llvm::sys::path::filename(path).str(),
                             (*buffer)->getBuffer().str());
  }
  return entry;
}

bool WriteEntryFiles(const CacheEntry& entry,
                     const std::vector<std::string>& paths) {
  if (entry.files.size() != paths.size()) return false;
  for (size_t i = 0; i < paths.size(); ++i) {
    // Replaced, not overwritten in place: a running program may map it.
    llvm::sys::fs::remove(paths[i]);
    std::error_code error;
    llvm::raw_fd_ostream file(paths[i], error);
    if (error) return false;
    file << entry.files[i].second;
    file.close();
    if (file.has_error()) {
      file.clear_error();
      return false;
    }
  }
  return true;
}

std::string FileIdentity(const std::string& path) {
  llvm::sys::fs::file_status status;
  if (llvm::sys::fs::status(path, status)) return path;
  return path + " " + std::to_string(status.getSize()) + " " +
         std::to_string(
             status.getLastModificationTime().time_since_epoch().count());
}

std::string CompilerIdentity() {
  static int anchor;
  return "dlc " DELTA_VERSION " LLVM " LLVM_VERSION_STRING " " +
         FileIdentity(llvm::sys::fs::getMainExecutable(nullptr, &anchor));
}

}  // namespace delta::driver
