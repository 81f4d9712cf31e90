// The trip store: tteps-pack's pipeline, the memory-mapped reader, integrity checks, and the
// data set's splits over a store.
#include "model/data/trip_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "model/data/norm_stats.h"
#include "model/data/pack.h"
#include "model/data/padded_batch.h"
#include "model/data/synthetic.h"
#include "model/data/trip_json.h"
#include "model/data/trip_reader.h"
#include "model/data/trip_store_format.h"
#include "model/dataset.h"

namespace tteps::data {
namespace {

namespace fs = std::filesystem;

std::string Temp(const std::string& name) {
  const std::string path = testing::TempDir() + "tteps_store_" + name;
  fs::remove_all(path);
  return path;
}

// n synthetic trips, with dateIDs 3, 4 and 5 in turn, as a JSON-lines file.
std::string WriteTrips(const std::string& name, size_t n, uint64_t seed = 1) {
  std::mt19937_64 rng(seed);
  std::string text;
  for (size_t i = 0; i < n; ++i) {
    Trip t = GenerateTrip(rng);
    t.date_id = 3 + static_cast<int64_t>(i % 3);
    AppendTripJson(t, &text);
  }
  const std::string path = Temp(name + ".jsonl");
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

PackResult Pack(const std::vector<std::string>& inputs, const std::string& out, int threads = 2,
                uint64_t shard_trips = 7, size_t block_bytes = 4096,
                BadRecordPolicy bad = BadRecordPolicy::kFail) {
  PackOptions o;
  o.inputs = inputs;
  o.out_dir = out;
  o.threads = threads;
  o.shard_trips = shard_trips;
  o.block_bytes = block_bytes;
  o.bad_records = bad;
  return PackTrips(o);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void ExpectSameTrip(const Trip& a, const Trip& b, size_t i) {
  EXPECT_EQ(a.driver_id, b.driver_id) << i;
  EXPECT_EQ(a.date_id, b.date_id) << i;
  EXPECT_EQ(a.week_id, b.week_id) << i;
  EXPECT_EQ(a.time_id, b.time_id) << i;
  EXPECT_EQ(a.dist, b.dist) << i;
  EXPECT_EQ(a.time, b.time) << i;
  EXPECT_EQ(a.lngs, b.lngs) << i;
  EXPECT_EQ(a.lats, b.lats) << i;
  EXPECT_EQ(a.states, b.states) << i;
  EXPECT_EQ(a.time_gap, b.time_gap) << i;
  EXPECT_EQ(a.dist_gap, b.dist_gap) << i;
}

// Flips one byte of a file in place.
void FlipByte(const std::string& path, size_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(c ^ 0x40));
}

template <class F>
std::string ErrorOf(F f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TripStore, HoldsEveryTripOfTheFilesBitForBitInOrder) {
  const std::string a = WriteTrips("a", 40, 1), b = WriteTrips("b", 25, 2);
  const std::string dir = Temp("every");
  const PackResult r = Pack({a, b}, dir);
  EXPECT_EQ(r.trips, 65u);
  ASSERT_EQ(r.reports.size(), 2u);
  EXPECT_EQ(r.reports[1].records, 25u);

  std::vector<Trip> json = ReadTripFiles({a, b}, ReadOptions{});
  const auto store = TripStore::Open(dir);
  ASSERT_EQ(store->size(), json.size());
  EXPECT_EQ(store->manifest().shards.size(), 10u);  // 65 trips, 7 a shard
  for (size_t i = 0; i < json.size(); ++i) {
    ExpectSameTrip(ToTrip(store->at(i)), json[i], i);
    EXPECT_EQ(store->length(i), json[i].length());
    EXPECT_EQ(store->date_id(i), json[i].date_id);
  }
  EXPECT_THROW(store->at(json.size()), std::out_of_range);

  // The statistics of the trips in input order, to the last bit, however the pack cut its
  // input into blocks: what a job computes from the JSON lines.
  const NormStats want = ComputeNormStats(json), got = LoadNormStats(store->stats_path());
  EXPECT_EQ(std::memcmp(&got, &want, sizeof(NormStats)), 0);
  EXPECT_NO_THROW(VerifyTripStore(dir));
}

TEST(TripStore, TheSameInputGivesTheSameBytesWithAnyThreadCount) {
  const std::string a = WriteTrips("same", 90);
  const std::string one = Temp("one"), four = Temp("four");
  const std::string c1 = Pack({a}, one, 1).checksum, c4 = Pack({a}, four, 4).checksum;
  EXPECT_EQ(c1, c4);
  for (const auto& e : fs::directory_iterator(one)) {
    const std::string name = e.path().filename().string();
    EXPECT_EQ(ReadFile(e.path().string()), ReadFile(four + "/" + name)) << name;
  }
}

TEST(TripStore, ItsIdentityIsItsTripsHoweverItIsSharded) {
  const std::string a = WriteTrips("identity", 30);
  EXPECT_EQ(Pack({a}, Temp("identity7"), 2, 7).checksum,
            Pack({a}, Temp("identity5"), 2, 5).checksum);
  EXPECT_NE(Pack({a}, Temp("identity_other"), 2, 7).checksum,
            Pack({WriteTrips("identity_b", 30, 9)}, Temp("identity_b"), 2, 7).checksum);
}

TEST(TripStore, AnIdOutOfRangeIsRefusedEvenWithAMatchingChecksum) {
  const std::string dir = Temp("ids");
  Pack({WriteTrips("ids", 5)}, dir, 1, 7);
  const std::string shard = dir + "/shard-00000.bin";
  const store::ShardLayout l = store::LayoutOf(5, TripStore::Open(dir)->manifest().points);
  std::string bytes = ReadFile(shard);
  int32_t date = 99;  // trip 0's dateID, and a CRC-32C that matches it
  std::memcpy(&bytes[l.date], &date, 4);
  const auto* offsets = reinterpret_cast<const uint64_t*>(bytes.data() + l.offsets);
  const auto at = [&](size_t off) { return bytes.data() + off; };
  double dist, time;
  int32_t driver, week, minute;
  std::memcpy(&dist, at(l.dist), 8);
  std::memcpy(&time, at(l.time), 8);
  std::memcpy(&driver, at(l.driver), 4);
  std::memcpy(&week, at(l.week), 4);
  std::memcpy(&minute, at(l.minute), 4);
  const uint32_t crc = store::TripCrc(reinterpret_cast<const float*>(at(l.points)), offsets[1],
                                      dist, time, driver, date, week, minute);
  std::memcpy(&bytes[l.crc], &crc, 4);
  std::ofstream(shard, std::ios::binary | std::ios::trunc) << bytes;
  const auto store = TripStore::Open(dir);
  EXPECT_NE(ErrorOf([&] { store->at(0); }).find("an id is out of range"), std::string::npos);
  EXPECT_NE(ErrorOf([&] { store->date_id(0); }).find("its dateID is out of range"),
            std::string::npos);
}

TEST(TripStore, AManifestWhoseCountsCannotFitItsShardsIsRefused) {
  const std::string dir = Temp("counts");
  Pack({WriteTrips("counts", 5)}, dir, 1, 7);
  std::string manifest = ReadFile(dir + "/manifest.json");
  const std::string trips = "\"trips\":5,";
  manifest.replace(manifest.find(trips), trips.size(), "\"trips\":4611686018427387904,");
  std::ofstream(dir + "/manifest.json", std::ios::binary | std::ios::trunc) << manifest;
  const std::string err = ErrorOf([&] { TripStore::Open(dir); });
  EXPECT_NE(err.find("cannot fit its"), std::string::npos) << err;
}

TEST(TripStore, RefusesAStoreDirectoryThatIsNotEmpty) {
  const std::string a = WriteTrips("busy", 5), dir = Temp("busy");
  Pack({a}, dir);
  EXPECT_NE(ErrorOf([&] { Pack({a}, dir); }).find("exists and is not empty"), std::string::npos);
}

TEST(TripStore, ABadRecordIsNamedByFileLineAndFieldAcrossBlocks) {
  std::string text = ReadFile(WriteTrips("bad", 30));
  // Line 23 loses its label; small blocks put it far from the first block.
  size_t at = 0;
  for (int line = 1; line < 23; ++line) at = text.find('\n', at) + 1;
  const size_t time = text.find("\"time\":", at);
  text.replace(time, 7, "\"tine\":");
  const std::string path = Temp("bad_edit.jsonl");
  std::ofstream(path, std::ios::binary) << text;

  const std::string err = ErrorOf([&] { Pack({path}, Temp("bad_fail"), 2, 7, 2000); });
  EXPECT_NE(err.find(path + ":23: field 'time': missing"), std::string::npos) << err;
  EXPECT_FALSE(IsTripStore(Temp("bad_fail")));

  const PackResult r = Pack({path}, Temp("bad_skip"), 2, 7, 2000, BadRecordPolicy::kSkip);
  EXPECT_EQ(r.trips, 29u);
  ASSERT_EQ(r.reports.size(), 1u);
  EXPECT_EQ(r.reports[0].skipped, 1u);
  EXPECT_EQ(r.reports[0].first_bad_lines, std::vector<size_t>{23});
}

TEST(TripStore, ADamagedTripIsNamedAndNeverRead) {
  const std::string dir = Temp("damaged");
  Pack({WriteTrips("damaged", 20)}, dir);
  const std::string shard = dir + "/shard-00001.bin";
  FlipByte(shard, fs::file_size(shard) - 10);  // a point of the shard's last trip (13)
  const auto store = TripStore::Open(dir);     // sizes and headers are fine
  EXPECT_NO_THROW(store->at(7));
  const std::string err = ErrorOf([&] { store->at(13); });
  EXPECT_NE(err.find("shard shard-00001.bin, trip 6 (trip 13 of the store): its checksum does "
                     "not match"),
            std::string::npos)
      << err;
  const std::string verify = ErrorOf([&] { VerifyTripStore(dir); });
  EXPECT_NE(verify.find("shard-00001.bin: checksum"), std::string::npos) << verify;
}

TEST(TripStore, ATruncatedShardOrAnotherFormatVersionFailsAtOpen) {
  const std::string dir = Temp("truncated");
  Pack({WriteTrips("truncated", 20)}, dir);
  fs::resize_file(dir + "/shard-00002.bin", fs::file_size(dir + "/shard-00002.bin") - 4);
  std::string err = ErrorOf([&] { TripStore::Open(dir); });
  EXPECT_NE(err.find("shard shard-00002.bin: truncated"), std::string::npos) << err;

  const std::string v2 = Temp("version");
  Pack({WriteTrips("version", 20)}, v2);
  std::string manifest = ReadFile(v2 + "/manifest.json");
  manifest.replace(manifest.find("\"version\": 1"), 12, "\"version\": 2");
  std::ofstream(v2 + "/manifest.json", std::ios::binary) << manifest;
  err = ErrorOf([&] { TripStore::Open(v2); });
  EXPECT_NE(err.find("format version 2, this tteps reads version 1"), std::string::npos) << err;
  manifest.replace(manifest.find("\"version\": 2"), 12, "\"version\": 0");  // an older one
  std::ofstream(v2 + "/manifest.json", std::ios::binary) << manifest;
  err = ErrorOf([&] { TripStore::Open(v2); });
  EXPECT_NE(err.find("format version 0, this tteps reads version 1"), std::string::npos) << err;

  const std::string header = Temp("header");
  Pack({WriteTrips("header", 20)}, header);
  FlipByte(header + "/shard-00000.bin", 8);  // the header's version field
  err = ErrorOf([&] { TripStore::Open(header); });
  EXPECT_NE(err.find("shard shard-00000.bin: format version"), std::string::npos) << err;
}

TEST(TripStore, AShardChangedUnderTheReaderIsNamed) {
  const std::string dir = Temp("changed");
  Pack({WriteTrips("changed", 20)}, dir);
  const auto store = TripStore::Open(dir);
  EXPECT_NO_THROW(store->CheckUnchanged());
  // Replaced by a copy (same bytes, a new file), as a re-run of tteps-pack and a move would.
  fs::copy_file(dir + "/shard-00001.bin", dir + "/copy.bin");
  fs::rename(dir + "/copy.bin", dir + "/shard-00001.bin");
  const std::string err = ErrorOf([&] { store->CheckUnchanged(); });
  EXPECT_NE(err.find("shard shard-00001.bin changed under the running job: it was replaced"),
            std::string::npos)
      << err;
}

// A shard truncated under an open store: reads of its lost pages are named (the shard and how it
// shrank), never a SIGBUS.
TEST(TripStore, AShardCutShortUnderTheReaderIsNamedNotASignal) {
  const std::string json = WriteTrips("cut", 2000);
  const std::string dir = Temp("cut");
  Pack({json}, dir, 2, 100000);
  const auto store = TripStore::Open(dir);
  const std::string shard = dir + "/" + store->manifest().shards[0].file;
  const auto bytes = fs::file_size(shard);
  ASSERT_GT(bytes, 256u * 1024);
  fs::resize_file(shard, bytes / 2);
  const std::string err = ErrorOf([&] {
    for (size_t i = 0; i < store->size(); ++i) MakeBatch(*store, {i}, NormStats{});
  });
  EXPECT_NE(err.find(store->manifest().shards[0].file), std::string::npos) << err;
  EXPECT_NE(err.find("under the running job"), std::string::npos) << err;
  EXPECT_NE(
      err.find(" from " + std::to_string(bytes) + " to " + std::to_string(bytes / 2) + " bytes"),
      std::string::npos)
      << err;
}

TEST(Dataset, ReadsAStoreWhereverItReadsJsonLinesAndHoldsOutTheLatestDay) {
  const std::string json = WriteTrips("dataset", 30);
  const std::string dir = Temp("dataset");
  Pack({json}, dir);
  for (const std::string& source : {json, dir}) {
    DataConfig c;
    c.train_files = {source};
    c.split = "day";
    const Dataset ds = LoadDataset(c, 3);
    EXPECT_EQ(ds.train->size(), 20u) << source;
    ASSERT_EQ(ds.eval->size(), 10u) << source;
    for (size_t i = 0; i < ds.eval->size(); ++i) EXPECT_EQ(ds.eval->date_id(i), 5);
    for (size_t i = 0; i < ds.train->size(); ++i) EXPECT_NE(ds.train->date_id(i), 5);
    c.eval_dates = {3, 4};
    EXPECT_EQ(LoadDataset(c, 3).eval->size(), 20u);
    c.eval_dates = {9};
    EXPECT_THROW(LoadDataset(c, 3), std::invalid_argument);
  }
  DataConfig random;
  random.train_files = {dir};
  random.split = "random";
  const Dataset ds = LoadDataset(random, 3);
  EXPECT_EQ(ds.store_checksum, TripStore::Open(dir)->manifest().checksum);
  EXPECT_EQ(ds.eval->size(), 5u);  // round(30 x 0.1667)
  EXPECT_EQ(ds.split, "random");
  // By default: the day split (the trips span several dates), and the statistics of every trip,
  // the same to the last bit from the JSON lines and from the store packed from them.
  DataConfig defaults;
  defaults.train_files = {json};
  const Dataset from_json = LoadDataset(defaults, 3);
  defaults.train_files = {dir};
  const Dataset from_store = LoadDataset(defaults, 3);
  for (const Dataset* d : {&from_json, &from_store}) {
    EXPECT_EQ(d->split, "day");
    EXPECT_EQ(d->eval->size(), 10u);
  }
  EXPECT_EQ(std::memcmp(&from_json.stats, &from_store.stats, sizeof(NormStats)), 0);
  EXPECT_NE(from_json.stats_source.find("computed from the 30 trips"), std::string::npos);
  EXPECT_EQ(from_store.stats_source, dir + "/stats.json");
  // An evaluation that would have no trip is refused before anything trains.
  random.eval_fraction = 0.01;
  const std::string none = ErrorOf([&] { LoadDataset(random, 3); });
  EXPECT_NE(none.find("holds out no trip of 30 with --eval_fraction 0.01"), std::string::npos)
      << none;
  random.eval_fraction = 0;  // no evaluation asked for
  EXPECT_EQ(LoadDataset(random, 3).split, "none");
  // A store packed for shorter trips than the model needs is refused.
  const std::string err = ErrorOf([&] { OpenTrips({dir}, "fail", 200); });
  EXPECT_NE(err.find("pack it again with --min_points 200"), std::string::npos) << err;
  // A directory without a manifest (an interrupted pack) is not taken for JSON-lines.
  const std::string partial = Temp("no_manifest");
  fs::create_directories(partial);
  EXPECT_NE(
      ErrorOf([&] { OpenTrips({partial}, "fail", 3); }).find("is a directory but not a trip store"),
      std::string::npos);
}

}  // namespace
}  // namespace tteps::data
