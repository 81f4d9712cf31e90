// The flat parameter layout: offsets, and a fingerprint of names and shapes in order.
#include "worker/param_layout.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace tteps
