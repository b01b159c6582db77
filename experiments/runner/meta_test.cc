// experiments/runner/meta_test.cc: the freeze injector's priority in meta.json: asked from the
// spec, what it got from the preempt condition's ready file, and the fallback's reason.
#include "meta.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace spinlab::run {
namespace {

TEST(InjectorPriority, UnknownUntilAPreemptConditionSaysIt) {
    Meta m;
    m.preempt_rt_priority.asked = 10;
    EXPECT_FALSE(note_injector_priority(m, {})) << "hog and throttle state nothing";
    EXPECT_NE(meta_json(m).find("\"preempt_rt_priority\":{\"asked\":10,\"used\":null,\"fallback\":null}"),
              std::string::npos)
        << meta_json(m);
}

TEST(InjectorPriority, TheFallbackIsRecordedOnce) {
    Meta m;
    m.preempt_rt_priority.asked = 10;
    const std::map<std::string, std::string> refused{
        {"rt_priority_asked", "10"}, {"rt_priority", "0"},
        {"rt_priority_fallback", "sched_setscheduler(SCHED_FIFO, 10): Operation not permitted"}};
    EXPECT_TRUE(note_injector_priority(m, refused));
    EXPECT_EQ(m.preempt_rt_priority.used, 0u);
    EXPECT_NE(meta_json(m).find("\"used\":0,\"fallback\":\"sched_setscheduler(SCHED_FIFO, 10): Operation not "
                                "permitted\""),
              std::string::npos)
        << meta_json(m);
    EXPECT_FALSE(note_injector_priority(m, refused)) << "the next repetition says the same: no rewrite";
}

TEST(InjectorPriority, GrantedHasNoFallback) {
    Meta m;
    m.preempt_rt_priority.asked = 10;
    EXPECT_TRUE(note_injector_priority(m, {{"rt_priority", "10"}, {"rt_priority_fallback", ""}}));
    EXPECT_EQ(m.preempt_rt_priority.used, 10u);
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

}  // namespace
}  // namespace spinlab::run
