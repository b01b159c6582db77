// record's `end` line: the clock fit's fields, the drift's bound only when it was measured and
// the reason when it was not.
#include "record_file.h"

#include <gtest/gtest.h>

#include <string>

namespace spinlab::collect {
namespace {

bool has(const std::string& json, const std::string& key) {
    return json.find("\"" + key + "\"") != std::string::npos;
}

TEST(RecordEnd, AFitWithAMeasuredDriftStatesItsBound) {
    ClockFit fit;
    fit.ok = true;
    fit.drift_measured = true;
    fit.drift_ppm = 0.25;
    fit.drift_bound_ppm = 1.5;
    std::string j = record_end_json("done", 3, fit);
    EXPECT_TRUE(has(j, "drift_measured"));
    EXPECT_NE(j.find("\"drift_bound_ppm\":1.5"), std::string::npos) << j;
    EXPECT_FALSE(has(j, "error")) << j;
}

TEST(RecordEnd, ADriftNotMeasuredHasNoBoundAndIsNotAnError) {
    ClockFit fit;
    fit.ok = true;
    fit.drift_measured = false;
    fit.drift_coverage = 0.38;
    fit.drift_note = "the segments that agree on one rate cover 38% of the run";
    fit.noise_floor = 7644;
    std::string j = record_end_json("done", 3, fit);
    EXPECT_NE(j.find("\"drift_measured\":false"), std::string::npos) << j;
    EXPECT_FALSE(has(j, "drift_bound_ppm")) << j;
    EXPECT_FALSE(has(j, "error")) << j;
    // Why not, and how much of the run agreed: the reader sees the reason, not only a false.
    EXPECT_NE(j.find("\"drift_note\":\"the segments that agree on one rate cover 38% of the run\""), std::string::npos) << j;
    EXPECT_NE(j.find("\"drift_coverage\":0.38"), std::string::npos) << j;
    EXPECT_NE(j.find("\"noise_floor_cycles\":7644"), std::string::npos) << j;
}

TEST(RecordEnd, NoFitGivesTheReason) {
    ClockFit fit;
    fit.error = "need at least 2 clock samples";
    std::string j = record_end_json("interrupted", 0, fit);
    EXPECT_NE(j.find("need at least 2 clock samples"), std::string::npos) << j;
    EXPECT_FALSE(has(j, "drift_ppm")) << j;
}

}  // namespace
}  // namespace spinlab::collect
