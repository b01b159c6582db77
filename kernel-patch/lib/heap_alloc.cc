// lib/heap_alloc.cc: see heap_alloc.h.
#include "heap_alloc.h"

void HeapAllocator::init(void* base, size_t size) {
    uintptr_t b = (uintptr_t(base) + kAlign - 1) & ~(kAlign - 1);
    size -= b - uintptr_t(base);
    size &= ~(kAlign - 1);
    base_ = reinterpret_cast<uint8_t*>(b);
    size_ = size;
    free_list_ = reinterpret_cast<Block*>(base_);
    free_list_->size = size;
    free_list_->magic = kFree;
    free_list_->check = check_of(free_list_);
    free_list_->next = nullptr;
    free_bytes_ = size;
    live_ = 0;
}

void* HeapAllocator::alloc(size_t n) {
    if (n == 0 || n > size_) return nullptr;
    uint64_t need = (n + sizeof(Block) + kAlign - 1) & ~(kAlign - 1);
    for (Block **pp = &free_list_, *b = *pp; b; pp = &b->next, b = *pp) {
        if (b->size < need) continue;
        if (b->size - need >= sizeof(Block) + kAlign) {  // split: the tail stays free
            Block* rest = reinterpret_cast<Block*>(reinterpret_cast<uint8_t*>(b) + need);
            rest->size = b->size - need;
            rest->magic = kFree;
            rest->check = check_of(rest);
            rest->next = b->next;
            *pp = rest;
            b->size = need;
        } else {
            *pp = b->next;
        }
        b->magic = kUsed;
        b->check = check_of(b);
        b->next = nullptr;
        free_bytes_ -= b->size;
        live_++;
        return reinterpret_cast<uint8_t*>(b) + sizeof(Block);
    }
    return nullptr;
}

HeapAllocator::FreeResult HeapAllocator::free(void* p) {
    if (!p) return FreeResult::kNull;
    uint8_t* u = static_cast<uint8_t*>(p);
    if (u < base_ + sizeof(Block) || u >= base_ + size_ || (uintptr_t(u) & (kAlign - 1)))
        return FreeResult::kNotOurs;
    Block* b = reinterpret_cast<Block*>(u - sizeof(Block));
    if (b->magic == kFree && b->check == check_of(b)) return FreeResult::kDoubleFree;
    if (b->magic != kUsed || b->check != check_of(b)) return FreeResult::kCorrupt;
    b->magic = kFree;
    b->check = check_of(b);
    free_bytes_ += b->size;
    live_--;
    // Insert in address order, then merge with the neighbours that touch it.
    Block* prev = nullptr;
    Block* cur = free_list_;
    while (cur && cur < b) {
        prev = cur;
        cur = cur->next;
    }
    b->next = cur;
    if (prev) prev->next = b;
    else free_list_ = b;
    if (cur && reinterpret_cast<uint8_t*>(b) + b->size == reinterpret_cast<uint8_t*>(cur)) {
        b->size += cur->size;
        b->next = cur->next;
        b->check = check_of(b);
        cur->magic = 0;
    }
    if (prev && reinterpret_cast<uint8_t*>(prev) + prev->size == reinterpret_cast<uint8_t*>(b)) {
        prev->size += b->size;
        prev->next = b->next;
        prev->check = check_of(prev);
        b->magic = 0;
    }
    return FreeResult::kOk;
}
