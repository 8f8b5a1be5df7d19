// Slab pools for the small objects a connection keeps for its whole life
// (its NetFd, the HTTP server's registry entry and list node, a handler
// slot). Internal to the framework.
//
// Why: a connection allocates a few small long-lived objects at accept and
// then, while it serves, kilobytes of short-lived buffers (the read buffer,
// the parser's head, header lists). From one heap the two interleave, and
// when an idle connection gives its buffers back (framework/http "Released
// while idle"), each page still holding one of its small objects stays
// resident: ~6 KiB of RSS per idle connection for ~1 KiB of live data
// (measured with 5,000 idle connections, docs/DESIGN.md "Idle connections
// without a goroutine"). Carved from chunks of 64, the small objects pin a
// page per 64 connections instead, and the buffers' pages can go back to the
// kernel (malloc_trim).
//
// Thread-safe (one mutex per size class: objects made per connection, not
// per request); chunks are never freed.
#pragma once

#include <cstddef>
#include <mutex>
#include <new>
#include <vector>

namespace goro::net::slab {

template <std::size_t Size, std::size_t Align>
class SlabPool {
 public:
  static SlabPool& instance() {
    static auto* pool = new SlabPool;  // leaked: objects may outlive static destructors
    return *pool;
  }

  void* allocate() {
#if defined(GORO_ASAN)
    // Under ASan every object is its own allocation, so a use after free
    // of a NetFd or an entry is still reported (tests/net/stress_test.cpp).
    return ::operator new (kSlot, std::align_val_t{kAlign});
#else
    std::lock_guard lock(mu_);
    if (free_ == nullptr) grow();
    Node* n = free_;
    free_ = n->next;
    return n;
#endif
  }
  void deallocate(void* p) noexcept {
#if defined(GORO_ASAN)
    ::operator delete (p, std::align_val_t{kAlign});
#else
    std::lock_guard lock(mu_);
    auto* n = static_cast<Node*>(p);
    n->next = free_;
    free_ = n;
#endif
  }

 private:
  static constexpr std::size_t kPerChunk = 64;
  static constexpr std::size_t kAlign = Align < alignof(void*) ? alignof(void*) : Align;
  static constexpr std::size_t kSlot =
      (Size < sizeof(void*) ? sizeof(void*) : Size + kAlign - 1) / kAlign * kAlign;
  struct Node {
    Node* next;
  };

  void grow() {
    auto* chunk =
        static_cast<std::byte*>(::operator new (kSlot* kPerChunk, std::align_val_t{kAlign}));
    for (std::size_t i = kPerChunk; i-- > 0;) {
      auto* n = reinterpret_cast<Node*>(chunk + i * kSlot);  // NOLINT: raw slab memory
      n->next = free_;
      free_ = n;
    }
  }

  std::mutex mu_;
  Node* free_ = nullptr;  // guarded by mu_
};

// A standard allocator over SlabPool for single objects (allocate_shared's
// control block, a list's nodes); arrays go to the heap.
template <class T>
struct SlabAllocator {
  using value_type = T;
  SlabAllocator() = default;
  template <class U>
  SlabAllocator(const SlabAllocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor)

  T* allocate(std::size_t n) {
    if (n != 1)
      return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{alignof(T)}));
    return static_cast<T*>(SlabPool<sizeof(T), alignof(T)>::instance().allocate());
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (n != 1) {
      ::operator delete (p, std::align_val_t{alignof(T)});
      return;
    }
    SlabPool<sizeof(T), alignof(T)>::instance().deallocate(p);
  }
  template <class U>
  bool operator==(const SlabAllocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace goro::net::slab
