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

}  // namespace
}  // namespace spinlab::collect
