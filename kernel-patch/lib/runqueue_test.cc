#include "lib/runqueue.h"

#include <gtest/gtest.h>

namespace {

struct T {
    T* rq_next = nullptr;
    int affinity = kAnyCpu;
    int id = 0;
};

TEST(RunQueue, FifoForUnpinnedThreads) {
    RunQueue<T> q;
    T a{nullptr, kAnyCpu, 1}, b{nullptr, kAnyCpu, 2}, c{nullptr, kAnyCpu, 3};
    q.push(&a);
    q.push(&b);
    q.push(&c);
    EXPECT_EQ(q.size(), 3u);
    EXPECT_EQ(q.pick(0)->id, 1);
    EXPECT_EQ(q.pick(5)->id, 2);
    EXPECT_EQ(q.pick(0)->id, 3);
    EXPECT_EQ(q.pick(0), nullptr);
    EXPECT_TRUE(q.empty());
}

TEST(RunQueue, PushFrontGoesAheadOfTheQueueAndKeepsTheTail) {
    RunQueue<T> q;
    T a{nullptr, kAnyCpu, 1}, b{nullptr, kAnyCpu, 2}, s{nullptr, kAnyCpu, 9}, e{nullptr, kAnyCpu, 4};
    q.push_front(&s);  // into an empty queue: head and tail
    q.push(&a);
    EXPECT_EQ(q.pick(0)->id, 9);
    q.push(&b);
    q.push_front(&s);
    q.push(&e);
    EXPECT_EQ(q.size(), 4u);
    EXPECT_EQ(q.pick(1)->id, 9);
    EXPECT_EQ(q.pick(1)->id, 1);
    EXPECT_EQ(q.pick(1)->id, 2);
    EXPECT_EQ(q.pick(1)->id, 4);
    EXPECT_TRUE(q.empty());
}

TEST(RunQueue, PinnedThreadsOnlyOnTheirCpu) {
    RunQueue<T> q;
    T p1{nullptr, 1, 1}, any{nullptr, kAnyCpu, 2}, p0{nullptr, 0, 3};
    q.push(&p1);
    q.push(&any);
    q.push(&p0);
    EXPECT_FALSE(q.has_work_for(2) == false);  // 'any' can run on cpu 2
    EXPECT_EQ(q.pick(0)->id, 2);               // skips p1, takes the oldest eligible
    EXPECT_FALSE(q.has_work_for(2));
    EXPECT_EQ(q.pick(2), nullptr);
    EXPECT_EQ(q.pick(0)->id, 3);
    EXPECT_EQ(q.pick(1)->id, 1);
    EXPECT_EQ(q.size(), 0u);
}

TEST(RunQueue, RemoveKeepsTailConsistent) {
    RunQueue<T> q;
    T a{nullptr, kAnyCpu, 1}, b{nullptr, kAnyCpu, 2};
    q.push(&a);
    q.push(&b);
    EXPECT_TRUE(q.remove(&b));
    EXPECT_FALSE(q.remove(&b));
    T c{nullptr, kAnyCpu, 3};
    q.push(&c);  // would be lost if tail still pointed at b
    EXPECT_EQ(q.pick(0)->id, 1);
    EXPECT_EQ(q.pick(0)->id, 3);
}

}  // namespace
