// lib/runqueue.h: the scheduler's run queue: a FIFO of runnable threads, intrusive (the link
// lives in the thread), picking the first thread allowed on the asking CPU; a thread can also
// be put at the head (a service thread woken by I/O). Pure; the kernel guards it with sched_lock.
#pragma once
#include <stdint.h>

constexpr int kAnyCpu = -1;

// T has: T* rq_next; int affinity (kAnyCpu or a CPU number).
template <class T>
class RunQueue {
public:
    void push(T* t) {
        t->rq_next = nullptr;
        if (tail_) tail_->rq_next = t;
        else head_ = t;
        tail_ = t;
        size_++;
    }
    // Ahead of every queued thread: the next pick that may run it takes it.
    void push_front(T* t) {
        t->rq_next = head_;
        head_ = t;
        if (!tail_) tail_ = t;
        size_++;
    }
    // Removes and returns the oldest thread that may run on cpu, or nullptr.
    T* pick(int cpu) {
        T* prev = nullptr;
        for (T* t = head_; t; prev = t, t = t->rq_next) {
            if (t->affinity != kAnyCpu && t->affinity != cpu) continue;
            unlink(prev, t);
            return t;
        }
        return nullptr;
    }
    bool remove(T* x) {
        T* prev = nullptr;
        for (T* t = head_; t; prev = t, t = t->rq_next)
            if (t == x) {
                unlink(prev, t);
                return true;
            }
        return false;
    }
    // Is any queued thread allowed on cpu?
    bool has_work_for(int cpu) const {
        for (T* t = head_; t; t = t->rq_next)
            if (t->affinity == kAnyCpu || t->affinity == cpu) return true;
        return false;
    }
    uint32_t size() const { return size_; }
    bool empty() const { return !head_; }

private:
    void unlink(T* prev, T* t) {
        if (prev) prev->rq_next = t->rq_next;
        else head_ = t->rq_next;
        if (tail_ == t) tail_ = prev;
        t->rq_next = nullptr;
        size_--;
    }
    T* head_ = nullptr;
    T* tail_ = nullptr;
    uint32_t size_ = 0;
};
