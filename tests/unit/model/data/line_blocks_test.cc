// tteps-pack's reader: blocks of whole lines, in order, through O_DIRECT or the page cache.
#include "model/data/line_blocks.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "model/data/data_error.h"

namespace tteps::data {
namespace {

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = testing::TempDir() + "tteps_blocks_" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// Lines of random lengths (1 to `longest` characters), each ended by a newline.
std::string Lines(size_t n, size_t longest, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string text;
  for (size_t i = 0; i < n; ++i) {
    text += std::string(1 + rng() % longest, static_cast<char>('a' + i % 26));
    text += '\n';
  }
  return text;
}

// Every block of `reader`: its file, its text; checks the order and that each ends a line.
std::vector<std::pair<size_t, std::string>> ReadAll(LineBlockReader& reader) {
  std::vector<std::pair<size_t, std::string>> out;
  while (auto b = reader.Next()) {
    EXPECT_EQ(b->seq, out.size());
    EXPECT_GE(b->buffer.capacity(), b->begin + b->size + LineBlock::kPadding);
    out.emplace_back(b->file, std::string(b->text()));
  }
  return out;
}

TEST(LineBlockReader, BlocksAreWholeLinesThatMakeUpEachFileInOrder) {
  // Lines up to 3 blocks long, a file without a last newline, an empty file, one of one line.
  const std::string a = Lines(3000, 10000, 1), b = Lines(50, 100, 2) + "no newline at the end";
  const std::vector<std::string> texts = {a, "", b, "x\n"};
  std::vector<std::string> files;
  for (size_t i = 0; i < texts.size(); ++i) {
    files.push_back(WriteFile("order" + std::to_string(i), texts[i]));
  }
  for (const bool direct : {true, false}) {
    SCOPED_TRACE(direct ? "O_DIRECT where allowed" : "page cache");
    BufferPool pool;
    LineBlockReader reader(files, 4096, &pool, direct);
    std::vector<std::string> got(texts.size());
    for (const auto& [file, text] : ReadAll(reader)) {
      ASSERT_LT(file, texts.size());
      ASSERT_FALSE(text.empty());
      if (!(file == 2 && got[2].size() + text.size() == b.size())) {
        EXPECT_EQ(text.back(), '\n');  // only a file's last line may end without one
      }
      got[file] += text;
    }
    EXPECT_EQ(got, texts);
    uint64_t total = 0;
    for (const auto& t : texts) total += t.size();
    EXPECT_EQ(reader.bytes_read(), total);
  }
}

TEST(LineBlockReader, SkipsAByteOrderMarkAndNamesACompressedFile) {
  BufferPool pool;
  LineBlockReader bom({WriteFile("bom", "\xef\xbb\xbf{}\n{}\n")}, 4096, &pool);
  auto b = bom.Next();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->text(), "{}\n{}\n");
  LineBlockReader gz({WriteFile("gz", std::string("\x1f\x8b\x08\x00", 4) + "...")}, 4096, &pool);
  try {
    gz.Next();
    ADD_FAILURE() << "no DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("is gzip-compressed"), std::string::npos) << e.what();
  }
}

TEST(LineBlockReader, AMissingFileIsNamed) {
  BufferPool pool;
  LineBlockReader reader({WriteFile("exists", "a\n"), "/nonexistent/trips.jsonl"}, 4096, &pool);
  ASSERT_TRUE(reader.Next().has_value());
  try {
    reader.Next();
    ADD_FAILURE() << "no DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open data file '/nonexistent/trips.jsonl'"),
              std::string::npos)
        << e.what();
  }
}

TEST(BufferPool, HandsBackAGivenBufferThatIsLargeEnough) {
  BufferPool pool;
  AlignedBuffer b = pool.Take(10000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % AlignedBuffer::kAlign, 0u);
  EXPECT_GE(b.capacity(), 10000u);
  char* p = b.data();
  pool.Give(std::move(b));
  EXPECT_NE(pool.Take(100000).data(), p);  // too small: a new one
  EXPECT_EQ(pool.Take(5000).data(), p);
}

}  // namespace
}  // namespace tteps::data
