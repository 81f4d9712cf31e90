#include "model/data/line_blocks.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <utility>

#include "model/data/data_error.h"
#include "model/data/text_start.h"

namespace tteps::data {
namespace {

size_t RoundUp(size_t n) {
  return (n + AlignedBuffer::kAlign - 1) / AlignedBuffer::kAlign * AlignedBuffer::kAlign;
}

}  // namespace

AlignedBuffer::AlignedBuffer(size_t capacity) : capacity_(RoundUp(capacity)) {
  void* p = nullptr;
  if (::posix_memalign(&p, kAlign, capacity_) != 0) throw std::bad_alloc();
  p_.reset(static_cast<char*>(p));
}

AlignedBuffer BufferPool::Take(size_t capacity) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& b : free_) {
      if (b.capacity() >= capacity) {
        AlignedBuffer out = std::move(b);
        b = std::move(free_.back());
        free_.pop_back();
        return out;
      }
    }
  }
  return AlignedBuffer(capacity);
}

void BufferPool::Give(AlignedBuffer b) {
  if (b.capacity() == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(std::move(b));
}

LineBlockReader::LineBlockReader(std::vector<std::string> files, size_t block_bytes,
                                 BufferPool* pool, bool direct)
    : files_(std::move(files)),
      block_bytes_(RoundUp(std::max<size_t>(block_bytes, 1))),
      pool_(pool),
      direct_(direct) {}

LineBlockReader::~LineBlockReader() { Close(); }

std::optional<LineBlock> LineBlockReader::Next() {
  while (file_ < files_.size()) {
    if (fd_ < 0) Open();
    // The carried start of a line goes just before the aligned place the read fills.
    const size_t room = RoundUp(carry_.size());
    LineBlock b;
    b.seq = seq_;
    b.file = file_;
    b.buffer = pool_->Take(room + block_bytes_ + LineBlock::kPadding);
    char* at = b.buffer.data() + room;
    std::memcpy(at - carry_.size(), carry_.data(), carry_.size());
    const size_t got = ReadFully(at, block_bytes_);
    bytes_read_ += got;
    b.begin = room - carry_.size();
    b.size = carry_.size() + got;
    if (offset_ == got) {  // the file's first bytes: a byte-order mark, or a compressed file
      const size_t skip = TextStart(files_[file_], std::string_view(at, std::min<size_t>(got, 8)));
      b.begin += skip;
      b.size -= skip;
    }
    carry_.clear();
    if (got < block_bytes_) {  // the file's end: whatever is left is its last line
      Close();
      ++file_;
      if (b.size == 0) {
        pool_->Give(std::move(b.buffer));
        continue;
      }
    } else {
      const char* text = b.buffer.data() + b.begin;
      const void* last = ::memrchr(text, '\n', b.size);
      if (last == nullptr) {  // one line longer than the block: read on
        carry_.assign(text, b.size);
        pool_->Give(std::move(b.buffer));
        continue;
      }
      const size_t keep = static_cast<size_t>(static_cast<const char*>(last) - text) + 1;
      carry_.assign(text + keep, b.size - keep);
      b.size = keep;  // a line ends at its newline (an empty line is a bad record)
    }
    ++seq_;
    return b;
  }
  return std::nullopt;
}

void LineBlockReader::Open() {
  const std::string& path = files_[file_];
  fd_ = direct_ ? ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT) : -1;
  direct_now_ = fd_ >= 0;
  if (fd_ < 0) fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);  // e.g. tmpfs refuses O_DIRECT
  if (fd_ < 0) throw DataError("cannot open data file '" + path + "': " + std::strerror(errno));
  offset_ = 0;
  ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);  // advice only: failures change nothing
}

void LineBlockReader::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

size_t LineBlockReader::ReadFully(char* out, size_t size) {
  size_t got = 0;
  while (got < size) {
    const ssize_t n = ::read(fd_, out + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EINVAL && direct_now_) {
      // O_DIRECT refused this transfer (an alignment the device wants larger, or a short read
      // that left the offset unaligned): the rest of the file goes through the page cache.
      direct_now_ = false;
      ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_DIRECT);
      continue;
    }
    if (n < 0) {
      throw DataError("read error in '" + files_[file_] + "': " + std::strerror(errno));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  // Read once: the pages a buffered read brought in are of no further use.
  if (!direct_now_) ::posix_fadvise(fd_, 0, static_cast<off_t>(offset_ + got), POSIX_FADV_DONTNEED);
  offset_ += got;
  return got;
}

}  // namespace tteps::data
