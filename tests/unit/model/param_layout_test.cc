// The flat parameter layout: offsets, and a fingerprint of names and shapes in order.
#include "model/param_layout.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "model/row_spans.h"

namespace tteps {
namespace {

TEST(ParamLayout, OffsetsAndFingerprint) {
  ParamLayout a({{"w", {2, 3}}, {"b", {3}}});
  ASSERT_EQ(a.entries().size(), 2u);
  EXPECT_EQ(a.entries()[1].offset, 6);
  EXPECT_EQ(a.total(), 9);
  EXPECT_EQ(ParamLayout({{"w", {2, 3}}, {"b", {3}}}).fingerprint(), a.fingerprint());
  EXPECT_NE(ParamLayout({{"w", {3, 2}}, {"b", {3}}}).fingerprint(), a.fingerprint());
  EXPECT_NE(ParamLayout({{"w", {2, 3}}, {"c", {3}}}).fingerprint(), a.fingerprint());
  EXPECT_NE(ParamLayout({{"b", {3}}, {"w", {2, 3}}}).fingerprint(), a.fingerprint());
}

TEST(ParamLayout, ModuleRunsInTheGivenOrderCoveringTheLayout) {
  const ParamLayout layout({{"a.w", {2, 3}}, {"a.b", {3}}, {"ab.w", {4}}, {"c.x.w", {2}}});
  const auto runs = ModuleRuns(layout, {"a", "ab", "c"});
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].first, 0u);
  EXPECT_EQ(runs[0].end, 2u);
  EXPECT_EQ(runs[0].keys, (KeyRange{0, 9}));
  EXPECT_EQ(runs[1].keys, (KeyRange{9, 13}));  // "ab" is not part of "a"
  EXPECT_EQ(runs[2].first, 3u);
  EXPECT_EQ(runs[2].keys, (KeyRange{13, 15}));
  EXPECT_TRUE(ModuleRuns(layout, {"ab", "a", "c"}).empty());  // not the layout's order
  EXPECT_TRUE(ModuleRuns(layout, {"a", "ab"}).empty());       // c left out
  EXPECT_TRUE(ModuleRuns(layout, {"a", "x", "ab", "c"}).empty());
}

TEST(RowSpans, DenseEntriesWholeAndTheListedRowsMerged) {
  // keys: a [0, 4), table t 5 x 2 [4, 14), b [14, 17)
  const ParamLayout layout({{"a", {4}}, {"t", {5, 2}}, {"b", {3}}});
  const RowSpans rows(layout, {"t"});
  EXPECT_EQ(rows.dense_keys(), 7);
  // Row 0 touches a's keys, rows 2 and 3 touch each other, row 4 touches b's keys.
  EXPECT_EQ(rows.Spans({{0, 2, 3, 4}}), (std::vector<KeyRange>{{0, 6}, {8, 17}}));
  EXPECT_EQ(rows.Spans({{}}), (std::vector<KeyRange>{{0, 4}, {14, 17}}));
  EXPECT_EQ(rows.Spans({{1}}), (std::vector<KeyRange>{{0, 4}, {6, 8}, {14, 17}}));
}

TEST(RowSpans, RefusesUnknownTablesAndBadRows) {
  const ParamLayout layout({{"a", {4}}, {"t", {5, 2}}});
  EXPECT_THROW(RowSpans(layout, {"x"}), std::invalid_argument);
  EXPECT_THROW(RowSpans(layout, {"a"}), std::invalid_argument);  // not rows x width
  const RowSpans rows(layout, {"t"});
  EXPECT_THROW(rows.Spans({{5}}), std::out_of_range);
  EXPECT_THROW(rows.Spans({{-1}}), std::out_of_range);
  EXPECT_THROW(rows.Spans({{3, 1}}), std::out_of_range);  // unsorted
  EXPECT_THROW(rows.Spans({{1, 1}}), std::out_of_range);  // repeated
  EXPECT_THROW(rows.Spans({}), std::invalid_argument);    // one list per table
}

}  // namespace
}  // namespace tteps
