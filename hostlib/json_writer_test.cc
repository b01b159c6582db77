// The JSON writer places commas and escapes strings.
#include "json_writer.h"

#include <gtest/gtest.h>

namespace spinlab::collect {
namespace {

TEST(JsonWriter, NestsObjectsAndArraysWithCommas) {
    JsonWriter w;
    w.begin_object().field("a", 1).key("b").begin_array().value(uint64_t(2)).value("x")
        .begin_object().end_object().end_array().field("c", true).end_object();
    EXPECT_EQ(w.str(), "{\"a\":1,\"b\":[2,\"x\",{}],\"c\":true}");
}

TEST(JsonWriter, EscapesStringsAndRefusesNonFiniteNumbers) {
    JsonWriter w;
    w.begin_array().value("q\"b\\n\n\x01").value(1.5).value(0.0 / 0.0).end_array();
    EXPECT_EQ(w.str(), "[\"q\\\"b\\\\n\\n\\u0001\",1.5,null]");
}

// A measurement at its resolution (the latency JSON of spinlab-load): fixed decimals, no %.17g
// noise, and still null where JSON has no number.
TEST(JsonWriter, FixedWritesTheGivenDecimals) {
    JsonWriter w;
    w.begin_array().fixed(0.08, 4).fixed(2.0 / 3.0, 2).fixed(1.0 / 0.0, 3).end_array();
    EXPECT_EQ(w.str(), "[0.0800,0.67,null]");
}

}  // namespace
}  // namespace spinlab::collect
