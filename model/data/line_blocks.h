// Reads JSON-lines files as blocks of whole lines, for tteps-pack's parsing threads. Reads
// bypass the page cache where the file system allows (O_DIRECT): each input is read once, and
// copying 15 GB through the page cache, then reclaiming it, cost a third of packing's CPU time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tteps::data {

// A heap buffer aligned for O_DIRECT transfers.
class AlignedBuffer {
 public:
  static constexpr size_t kAlign = 4096;
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t capacity);
  char* data() const { return p_.get(); }
  size_t capacity() const { return capacity_; }

 private:
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> p_;
  size_t capacity_ = 0;
};

// A run of whole lines of one input file; at least `kPadding` readable bytes follow the text.
struct LineBlock {
  static constexpr size_t kPadding = 64;
  size_t seq = 0;   // position in the input, over all files
  size_t file = 0;  // index into the inputs
  AlignedBuffer buffer;
  size_t begin = 0, size = 0;
  std::string_view text() const { return {buffer.data() + begin, size}; }
};

// Buffers handed back by the parsing threads, so blocks do not fault in fresh memory each time.
class BufferPool {
 public:
  AlignedBuffer Take(size_t capacity);
  void Give(AlignedBuffer b);

 private:
  std::mutex mu_;
  std::vector<AlignedBuffer> free_;
};

class LineBlockReader {
 public:
  // `block_bytes` is rounded up to a multiple of AlignedBuffer::kAlign. With `direct` false, or
  // where a file system refuses O_DIRECT, reads go through the page cache, whose pages are
  // dropped behind the reader.
  LineBlockReader(std::vector<std::string> files, size_t block_bytes, BufferPool* pool,
                  bool direct = true);
  ~LineBlockReader();
  LineBlockReader(const LineBlockReader&) = delete;
  LineBlockReader& operator=(const LineBlockReader&) = delete;

  // The next block, or nothing after the last file. A file's last line needs no newline. A line
  // longer than a block makes a longer block. Throws DataError naming the file.
  std::optional<LineBlock> Next();
  uint64_t bytes_read() const { return bytes_read_; }
  // Whether the last file opened is read past the page cache.
  bool direct() const { return direct_now_; }

 private:
  void Open();
  void Close();
  size_t ReadFully(char* out, size_t size);

  std::vector<std::string> files_;
  size_t block_bytes_;
  BufferPool* pool_;
  bool direct_;
  bool direct_now_ = false;
  size_t file_ = 0, seq_ = 0;
  int fd_ = -1;
  uint64_t offset_ = 0;
  std::string carry_;  // the start of a line the last block cut
  uint64_t bytes_read_ = 0;
};

}  // namespace tteps::data
