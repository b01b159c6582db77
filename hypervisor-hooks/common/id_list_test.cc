#include "id_list.h"

#include <gtest/gtest.h>

#include "fs_util.h"

namespace spinlab::load {
namespace {

TEST(IdList, ParsesRangesSortsAndDeduplicates) {
    EXPECT_EQ(parse_id_list("3,0-2,2", "cpus"), (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(parse_id_list(" 5 ", "cpus"), (std::vector<int>{5}));
}

TEST(IdList, ErrorsNameTheOptionAndTheBadItem) {
    auto message = [](const std::string& text) {
        try {
            parse_id_list(text, "cpus", 63);
        } catch (const LoadError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(message(""), "--cpus is empty");
    EXPECT_EQ(message("1,,2"), "--cpus '1,,2': '' is not a non-negative integer");
    EXPECT_EQ(message("x"), "--cpus 'x': 'x' is not a non-negative integer");
    EXPECT_EQ(message("3-1"), "--cpus '3-1': range 3-1 is reversed");
    EXPECT_EQ(message("64"), "--cpus '64': 64 is above the maximum 63");
    EXPECT_EQ(message("-1"), "--cpus '-1': '' is not a non-negative integer");
}

TEST(IdList, SequenceKeepsOrderAndRejectsDuplicates) {
    EXPECT_EQ(parse_id_sequence("30,10,20", "tid"), (std::vector<int>{30, 10, 20}));
    EXPECT_THROW(parse_id_sequence("10,11,10", "tid"), LoadError);
}

TEST(IdList, FormatsBackIntoRanges) {
    EXPECT_EQ(format_id_list({0, 1, 2, 5, 7, 8}), "0-2,5,7-8");
    EXPECT_EQ(format_id_list({}), "");
    EXPECT_EQ(parse_id_list(format_id_list({1, 2, 3, 9}), "x"), (std::vector<int>{1, 2, 3, 9}));
}

}  // namespace
}  // namespace spinlab::load
