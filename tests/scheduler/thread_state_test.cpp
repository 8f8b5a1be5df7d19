// Thread state that belongs to the goroutine, not the M: errno, the
// floating-point control state, and the exception globals (catch blocks and
// unwinds across yields and parks, goro::run inside a catch block).
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cfenv>
#include <chrono>
#include <exception>
#include <stdexcept>
#include <string>

#include "goro/detail/park.hpp"
#include "goro/goro.hpp"
#if defined(__x86_64__)
#include <fpu_control.h>
#include <xmmintrin.h>
#endif

using namespace std::chrono_literals;

namespace {

// errno is read and written through out-of-line functions: within one
// function the compiler may keep errno's thread-local address across a call
// (see runtime.hpp), which no runtime can fix; the runtime's promise is the
// value a fresh read sees after a switch.
__attribute__((noinline)) void set_errno(int v) {
  asm volatile("" ::: "memory");
  errno = v;
}
__attribute__((noinline)) int get_errno() {
  asm volatile("" ::: "memory");
  return errno;
}

TEST(Runtime, ErrnoMigratesWithTheGoroutine) {
  std::atomic<int> bad{0};
  goro::run(
      [&] {
        for (int k = 0; k < 16; ++k) {
          goro::go([&, k] {
            for (int i = 0; i < 2000; ++i) {
              set_errno(1000 + k);
              goro::yield();
              if (get_errno() != 1000 + k) ++bad;
            }
          });
        }
        while (goro::num_goroutines() > 1)
          goro::yield();
      },
      {.maxprocs = 4});
  EXPECT_EQ(bad.load(), 0);
}

// The floating-point control state (rounding mode, flush-to-zero, and on
// x86-64 the x87 control word) belongs to the goroutine: the context switch
// saves and restores it (scheduler/context_*.S), so a goroutine finds its own
// after every yield and park, on whichever M it resumes, and a new goroutine
// starts from the default. Both the direct goroutine-to-goroutine switch and
// the one through g0 (parks, sleeps) are exercised.
struct FpEnv {
  int round;
  std::uint32_t control;  // MXCSR or FPCR bits beyond the rounding mode (flush-to-zero)
  std::uint32_t x87 = 0;  // x87 control word (x86-64)
};

FpEnv read_fp_env() {
  FpEnv e{std::fegetround(), 0};
#if defined(__x86_64__)
  e.control = _mm_getcsr() & _MM_FLUSH_ZERO_MASK;
  fpu_control_t cw;
  _FPU_GETCW(cw);
  e.x87 = cw;
#elif defined(__aarch64__)
  std::uint64_t fpcr;
  asm volatile("mrs %0, fpcr" : "=r"(fpcr));
  e.control = static_cast<std::uint32_t>(fpcr & (1u << 24));  // FZ
#endif
  return e;
}

void set_flush_to_zero(bool on) {
#if defined(__x86_64__)
  _mm_setcsr((_mm_getcsr() & ~_MM_FLUSH_ZERO_MASK) | (on ? _MM_FLUSH_ZERO_ON : 0));
#elif defined(__aarch64__)
  std::uint64_t fpcr;
  asm volatile("mrs %0, fpcr" : "=r"(fpcr));
  fpcr = on ? (fpcr | (1u << 24)) : (fpcr & ~std::uint64_t{1u << 24});
  asm volatile("msr fpcr, %0" ::"r"(fpcr));
#else
  (void)on;
#endif
}

bool same_env(const FpEnv& a, const FpEnv& b) {
  return a.round == b.round && a.control == b.control && a.x87 == b.x87;
}

TEST(Runtime, FloatingPointControlStateIsPerGoroutine) {
  static constexpr std::array kModes = {FE_TONEAREST, FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
  std::atomic<int> bad{0}, checks{0}, fresh_bad{0};
  goro::run(
      [&] {
        const FpEnv main_env = read_fp_env();
        for (int k = 0; k < 16; ++k) {
          goro::go([&, k] {
            ASSERT_EQ(std::fesetround(kModes[k % 4]), 0);
            set_flush_to_zero(k % 8 >= 4);
            const FpEnv mine = read_fp_env();
            for (int i = 0; i < 3000; ++i) {
              if (i % 100 == 99) {
                goro::sleep_for(std::chrono::microseconds(50));  // park, resumes through g0
              } else if (i % 10 == 9) {
                // A goroutine spawned from here starts from the default
                // environment, not this one.
                goro::go([&, main_env] {
                  if (!same_env(read_fp_env(), main_env)) ++fresh_bad;
                });
              } else {
                goro::yield();
              }
              if (!same_env(read_fp_env(), mine)) ++bad;
              ++checks;
            }
          });
        }
        while (goro::num_goroutines() > 1)
          goro::yield();
        // main never changed its own environment and got it back each time.
        if (!same_env(read_fp_env(), main_env)) ++bad;
      },
      {.maxprocs = 4});
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(fresh_bad.load(), 0);
  EXPECT_EQ(checks.load(), 16 * 3000);
}

TEST(Runtime, ParkingInsideCatchBlockKeepsTheException) {
  std::atomic<int> ok{0};
  goro::run(
      [&] {
        for (int k = 0; k < 8; ++k) {
          goro::go([&, k] {
            try {
              throw std::runtime_error("boom " + std::to_string(k));
            } catch (const std::exception&) {
              for (int i = 0; i < 200; ++i)
                goro::yield();
              try {
                throw;  // rethrow needs this goroutine's caught-exception stack
              } catch (const std::runtime_error& e) {
                if (std::string(e.what()) == "boom " + std::to_string(k)) ++ok;
              }
            }
          });
        }
        while (goro::num_goroutines() > 1)
          goro::yield();
      },
      {.maxprocs = 4});
  EXPECT_EQ(ok.load(), 8);
}

// goro::yield's fast path moves only errno and leaves the exception globals
// alone, relying on every switch away from a goroutine inside a catch block
// (or an unwind) to clear the thread's copy (sched.hpp "clean exception
// globals"). Goroutines inside catch blocks and unwinds, yielding and
// parking, share the Ms with clean ones that check after every yield that
// they see no exception and their own errno.
struct YieldsWhileUnwinding {
  std::atomic<int>* bad;
  ~YieldsWhileUnwinding() {
    for (int i = 0; i < 50; ++i) {
      goro::yield();
      if (std::uncaught_exceptions() != 1) ++*bad;
    }
  }
};

TEST(Runtime, CleanGoroutinesNeverSeeAnotherGoroutinesException) {
  std::atomic<int> bad{0}, caught{0}, unwound{0}, clean_checks{0};
  goro::run(
      [&] {
        for (int k = 0; k < 24; ++k) {
          goro::go([&, k] {
            switch (k % 3) {
              case 0:  // inside a catch block, yielding and parking
                try {
                  throw std::runtime_error("boom " + std::to_string(k));
                } catch (const std::exception&) {
                  for (int i = 0; i < 300; ++i) {
                    if (i % 50 == 49) {
                      goro::sleep_for(std::chrono::microseconds(20));
                    } else {
                      goro::yield();
                    }
                    if (std::current_exception() == nullptr) ++bad;
                  }
                  try {
                    throw;
                  } catch (const std::runtime_error& e) {
                    if (std::string(e.what()) == "boom " + std::to_string(k)) ++caught;
                  }
                }
                break;
              case 1:  // a destructor yielding during an unwind
                try {
                  YieldsWhileUnwinding y{&bad};
                  throw std::logic_error("unwind");
                } catch (const std::logic_error&) {
                  ++unwound;
                }
                break;
              default:  // clean: no exception, its own errno, after every switch
                for (int i = 0; i < 3000; ++i) {
                  set_errno(2000 + k);
                  goro::yield();
                  if (std::current_exception() != nullptr || std::uncaught_exceptions() != 0 ||
                      get_errno() != 2000 + k) {
                    ++bad;
                  }
                  ++clean_checks;
                }
            }
            // Whatever it went through, a goroutine ends clean.
            if (std::current_exception() != nullptr || std::uncaught_exceptions() != 0) ++bad;
          });
        }
        while (goro::num_goroutines() > 1)
          goro::yield();
      },
      {.maxprocs = 4});
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(caught.load(), 8);
  EXPECT_EQ(unwound.load(), 8);
  EXPECT_EQ(clean_checks.load(), 8 * 3000);
}

// goro::run called inside a catch block: the goroutines start clean, and the
// caller gets its exception (and errno) back when run returns.
TEST(Runtime, RunInsideCatchBlockKeepsTheCallersException) {
  std::atomic<int> bad{0};
  try {
    throw std::runtime_error("outer");
  } catch (const std::exception&) {
    set_errno(77);
    goro::run(
        [&] {
          if (std::current_exception() != nullptr) ++bad;
          for (int k = 0; k < 4; ++k) {
            goro::go([&] {
              for (int i = 0; i < 100; ++i) {
                goro::yield();
                if (std::current_exception() != nullptr) ++bad;
              }
            });
          }
          while (goro::num_goroutines() > 1)
            goro::yield();
        },
        {.maxprocs = 2});
    EXPECT_EQ(get_errno(), 77);
    try {
      throw;
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "outer");
    }
  }
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
