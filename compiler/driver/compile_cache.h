// The compilation cache: what `dlc run` and `dlc build` made of a program,
// kept on disk under a key of everything that went into it, so that an
// unchanged program skips compilation. See Note [Compilation cache].
#pragma once

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/BLAKE3.h>
#include <llvm/Support/SourceMgr.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace delta::driver {

// The default bound on the cache's size; DELTA_CACHE_MAX_MB changes it.
constexpr uint64_t kDefaultCacheMaxBytes = uint64_t{512} << 20;

// A key built from parts; each part counts with its length, so that no two
// different lists of parts give the same key.
class CacheKey {
 public:
  void Add(llvm::StringRef part);
  void Add(int64_t number) { Add(llvm::StringRef(std::to_string(number))); }
  // 64 hex digits.
  std::string Hex();

 private:
  llvm::BLAKE3 hasher_;
};

// What one entry holds: named files (an object, an executable, a library's
// files).
struct CacheEntry {
  std::vector<std::pair<std::string, std::string>> files;
  // The contents of the file called `name`, or null.
  const std::string* Find(llvm::StringRef name) const;
};

class CompileCache {
 public:
  // `dir` empty: every lookup misses and nothing is stored.
  CompileCache(std::string dir, uint64_t max_bytes)
      : dir_(std::move(dir)), max_bytes_(max_bytes) {}

  bool enabled() const { return !dir_.empty(); }

  // The entry under `key`, or nothing. An entry that cannot be read whole
  // (corrupt, cut short) is removed and counts as a miss. A hit marks the
  // entry as recently used.
  std::optional<CacheEntry> Load(llvm::StringRef key) const;

  // Stores `entry` under `key` (written to a temporary file, then renamed,
  // so that readers never see half an entry), then evicts the least
  // recently used entries beyond the size bound. Failures are ignored: the
  // cache only ever saves time.
  void Store(llvm::StringRef key, const CacheEntry& entry) const;

  // The file of the entry under `key`.
  std::string PathOf(llvm::StringRef key) const;

 private:
  void Evict() const;

  std::string dir_;
  uint64_t max_bytes_;
};

// The cache folder: $XDG_CACHE_HOME/delta, else ~/.cache/delta; empty if
// neither is known.
std::string DefaultCacheDir();

// The cache's size bound: DELTA_CACHE_MAX_MB if set, else the default.
uint64_t CacheMaxBytes();

// The key of what `settings` make of a checked program: the compiler's
// identity, the host, the settings, and every source file sema read into
// `sources`, by name and contents (Note [Compilation cache]).
std::string CompilationKey(const llvm::SourceMgr& sources,
                           llvm::ArrayRef<std::string> settings);

// An entry of the files at `paths` (named by their file names), or nothing
// if one cannot be read.
std::optional<CacheEntry> ReadEntryFiles(const std::vector<std::string>& paths);

// Writes the entry's files, in order, to `paths`; false if they do not
// correspond or one cannot be written.
bool WriteEntryFiles(const CacheEntry& entry,
                     const std::vector<std::string>& paths);

// A file's path, size and modification time: what changes when it is
// rebuilt, without reading it.
std::string FileIdentity(const std::string& path);

// What identifies this compiler: its version and LLVM's, and the dlc
// executable's FileIdentity, so that a rebuilt dlc never reads entries of
// another.
std::string CompilerIdentity();

}  // namespace delta::driver
