// Name resolution. getaddrinfo blocks its thread (files, DNS), so it must not
// run on an M holding a P. DESIGN.md wants it through goro::blocking (the
// syscall handoff), which does not exist yet.
//
// TEMPORARY: until goro::blocking lands, names are resolved on a small pool of
// dedicated resolver threads (at most kMaxResolverThreads, started on demand,
// never stopped). The goroutine parks; its commit (run once it is off its
// stack) queues the job, so a resolver thread that finishes quickly can never
// ready() a goroutine that is still running. ready() is safe from foreign
// threads (the G goes to the global queue). Replace `run_resolver_job` with
// `goro::blocking([&] { return getaddrinfo(...); })` when it exists.
//
// Numeric hosts and ports (the common case for servers) are parsed inline.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <atomic>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "framework/net/resolve.hpp"
#include "goro/detail/park.hpp"
#include "goro/runtime.hpp"

namespace goro::net {
namespace {

constexpr int kMaxResolverThreads = 4;

struct ResolveJob {
  std::string host, port;
  int family = AF_UNSPEC;
  bool passive = false;
  detail::G* waiter = nullptr;
  int rc = 0;
  int sys_errno = 0;  // errno of the resolver thread when rc == EAI_SYSTEM
  std::vector<Addr> out;
  // Set by the resolver thread after ready() has returned. ready() keeps
  // touching scheduler state (wakep) after the G is already runnable, so the
  // G waits for this flag before it can let goro::run finish and tear down.
  std::atomic<bool> released{false};
};

void run_lookup(ResolveJob& job) {
  addrinfo hints{};
  hints.ai_family = job.family;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = job.passive ? AI_PASSIVE : AI_ADDRCONFIG;
  addrinfo* res = nullptr;
  job.rc =
      getaddrinfo(job.host.empty() ? nullptr : job.host.c_str(), job.port.c_str(), &hints, &res);
  if (job.rc != 0) {
    job.sys_errno = errno;
    return;
  }
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_family == AF_INET || ai->ai_family == AF_INET6) {
      job.out.emplace_back(ai->ai_addr, ai->ai_addrlen);
    }
  }
  freeaddrinfo(res);
}

class ResolverPool {
 public:
  static ResolverPool& get() {
    static ResolverPool* pool = new ResolverPool;  // threads outlive statics
    return *pool;
  }

  // Called in the goroutine before it parks: make sure a thread will serve.
  void ensure_thread() {
    std::lock_guard<std::mutex> lock(mu_);
    if (idle_ > static_cast<int>(queue_.size()) || threads_ >= kMaxResolverThreads) return;
    ++threads_;
    std::thread([this] { serve(); }).detach();
  }

  // Park commit: runs off the goroutine's stack; must not block for long.
  static bool submit(detail::G* g, void* arg) {
    auto* job = static_cast<ResolveJob*>(arg);
    job->waiter = g;
    ResolverPool& pool = get();
    {
      std::lock_guard<std::mutex> lock(pool.mu_);
      pool.queue_.push_back(job);
    }
    pool.cv_.notify_one();
    return true;
  }

 private:
  void serve() {
    for (;;) {
      ResolveJob* job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        ++idle_;
        cv_.wait(lock, [this] { return !queue_.empty(); });
        --idle_;
        job = queue_.front();
        queue_.pop_front();
      }
      run_lookup(*job);
      detail::ready(job->waiter);
      job->released.store(true, std::memory_order_release);  // job may be gone after this
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<ResolveJob*> queue_;  // (mu_)
  int threads_ = 0;                // (mu_)
  int idle_ = 0;                   // (mu_)
};

int family_of(Network net) {
  if (net == Network::kTcp4) return AF_INET;
  if (net == Network::kTcp6) return AF_INET6;
  return AF_UNSPEC;
}

bool parse_port(const std::string& port, std::uint16_t* out) {
  unsigned v = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
  if (ec != std::errc{} || end != port.data() + port.size() || v > 65535) return false;
  *out = static_cast<std::uint16_t>(v);
  return true;
}

Addr make_v4(const in_addr& a, std::uint16_t port) {
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_addr = a;
  in.sin_port = htons(port);
  return Addr(reinterpret_cast<const sockaddr*>(&in), sizeof in);
}

Addr make_v6(const in6_addr& a, std::uint16_t port) {
  sockaddr_in6 in6{};
  in6.sin6_family = AF_INET6;
  in6.sin6_addr = a;
  in6.sin6_port = htons(port);
  return Addr(reinterpret_cast<const sockaddr*>(&in6), sizeof in6);
}

// Numeric and empty hosts; false when a lookup is needed.
bool resolve_inline(Network net, const std::string& host, std::uint16_t port, bool passive,
                    std::vector<Addr>& out) {
  const int family = family_of(net);
  if (host.empty()) {
    if (passive) {
      if (family == AF_INET) {
        out.push_back(make_v4(in_addr{htonl(INADDR_ANY)}, port));
      } else {
        out.push_back(make_v6(in6addr_any, port));  // dual-stack for "tcp"
        if (family == AF_UNSPEC) out.push_back(make_v4(in_addr{htonl(INADDR_ANY)}, port));
      }
    } else {
      if (family != AF_INET6) out.push_back(make_v4(in_addr{htonl(INADDR_LOOPBACK)}, port));
      if (family != AF_INET) out.push_back(make_v6(in6addr_loopback, port));
    }
    return true;
  }
  in_addr a4;
  in6_addr a6;
  if (inet_pton(AF_INET, host.c_str(), &a4) == 1) {
    if (family != AF_INET6) out.push_back(make_v4(a4, port));
    return true;
  }
  if (inet_pton(AF_INET6, host.c_str(), &a6) == 1) {
    if (family != AF_INET) out.push_back(make_v6(a6, port));
    return true;
  }
  return false;
}

}  // namespace

Result<std::vector<Addr>> resolve(Network net, const std::string& host, const std::string& port,
                                  bool passive) {
  std::vector<Addr> out;
  std::uint16_t numeric_port;
  if (parse_port(port, &numeric_port) && resolve_inline(net, host, numeric_port, passive, out)) {
    if (out.empty()) return errc::no_address;
    return out;
  }
  ResolveJob job;
  job.host = host;
  job.port = port;
  job.family = family_of(net);
  job.passive = passive;
  ResolverPool::get().ensure_thread();
  detail::park(detail::WaitReason::kSyscall, &ResolverPool::submit, &job);
  while (!job.released.load(std::memory_order_acquire))  // pairs with serve()'s store
    goro::yield();
  if (job.rc != 0) {
    if (job.rc == EAI_SYSTEM) return std::error_code(job.sys_errno, std::system_category());
    return errc::no_address;
  }
  if (job.out.empty()) return errc::no_address;
  return std::move(job.out);
}

}  // namespace goro::net
