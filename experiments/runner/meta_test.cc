// experiments/runner/meta_test.cc: the freeze injector's priority in meta.json: asked from the
// spec, what it got from the freeze condition's ready file, and the fallback's reason.
#include "meta.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace spinlab::run {
namespace {

TEST(InjectorPriority, UnknownUntilAFreezeConditionSaysIt) {
    Meta m;
    m.freeze_rt_priority.asked = 10;
    EXPECT_FALSE(note_injector_priority(m, {})) << "hog and throttle state nothing";
    EXPECT_NE(meta_json(m).find("\"freeze_rt_priority\":{\"asked\":10,\"used\":null,\"fallback\":null}"),
              std::string::npos)
        << meta_json(m);
}

TEST(InjectorPriority, TheFallbackIsRecordedOnce) {
    Meta m;
    m.freeze_rt_priority.asked = 10;
    const std::map<std::string, std::string> refused{
        {"rt_priority_asked", "10"}, {"rt_priority", "0"},
        {"rt_priority_fallback", "sched_setscheduler(SCHED_FIFO, 10): Operation not permitted"}};
    EXPECT_TRUE(note_injector_priority(m, refused));
    EXPECT_EQ(m.freeze_rt_priority.used, 0u);
    EXPECT_NE(meta_json(m).find("\"used\":0,\"fallback\":\"sched_setscheduler(SCHED_FIFO, 10): Operation not "
                                "permitted\""),
              std::string::npos)
        << meta_json(m);
    EXPECT_FALSE(note_injector_priority(m, refused)) << "the next repetition says the same: no rewrite";
}

TEST(InjectorPriority, GrantedHasNoFallback) {
    Meta m;
    m.freeze_rt_priority.asked = 10;
    EXPECT_TRUE(note_injector_priority(m, {{"rt_priority", "10"}, {"rt_priority_fallback", ""}}));
    EXPECT_EQ(m.freeze_rt_priority.used, 10u);
    EXPECT_NE(meta_json(m).find("\"used\":10,\"fallback\":null"), std::string::npos) << meta_json(m);
}

TEST(InjectorPriority, ABadPriorityIsAnErrorNamingIt) {
    Meta m;
    try {
        note_injector_priority(m, {{"rt_priority", "ten"}});
        FAIL() << "no error";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("'ten'"), std::string::npos) << e.what();
    }
}

TEST(Freezer, EachFreezeConditionsMeasuredWritesAreRecorded) {
    Meta m;
    EXPECT_FALSE(note_freezer(m, "host-load-r0", {})) << "hog and throttle state nothing";
    EXPECT_NE(meta_json(m).find("\"freezer\":[]"), std::string::npos) << meta_json(m);
    const std::map<std::string, std::string> v1{{"freezer_cgroup", "v1"},
                                                {"freezer_key_held", "1"},
                                                {"freezer_freeze_write_ms", "0.0091"},
                                                {"freezer_thaw_write_ms", "3.1250"}};
    EXPECT_TRUE(note_freezer(m, "freeze-30ms-r0", v1));
    EXPECT_NE(meta_json(m).find("\"freezer\":[{\"slot\":\"freeze-30ms-r0\",\"cgroup\":\"v1\",\"key_held\":true,"
                                "\"freeze_write_ms\":0.0091,\"thaw_write_ms\":3.1250}]"),
              std::string::npos)
        << meta_json(m);
}

TEST(Freezer, ABadFactIsAnErrorNamingIt) {
    Meta m;
    auto error_of = [&](std::map<std::string, std::string> facts) {
        try {
            note_freezer(m, "freeze-30ms-r0", facts);
        } catch (const std::runtime_error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    std::map<std::string, std::string> good{{"freezer_cgroup", "v2"},
                                            {"freezer_key_held", "0"},
                                            {"freezer_freeze_write_ms", "0.0120"},
                                            {"freezer_thaw_write_ms", "0.0200"}};
    auto with = [&](const char* key, const char* value) {
        auto f = good;
        f[key] = value;
        return f;
    };
    EXPECT_EQ(error_of(with("freezer_thaw_write_ms", "3ms")),
              "spinlab-load's ready file: freezer_thaw_write_ms '3ms' is not a time in ms");
    EXPECT_EQ(error_of(with("freezer_cgroup", "v3")), "spinlab-load's ready file: freezer_cgroup 'v3' is not v1 or v2");
    auto missing = good;
    missing.erase("freezer_key_held");
    EXPECT_EQ(error_of(missing), "spinlab-load's ready file: no freezer_key_held");
    EXPECT_TRUE(m.freezer.empty()) << "nothing half-recorded";
}

}  // namespace
}  // namespace spinlab::run
