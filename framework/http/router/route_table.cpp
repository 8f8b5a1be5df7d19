// Route matching: a decision tree over host, method and path segments.
//
// # The tree
//
// The nouns are a RouteEntry (one parsed pattern; its id is its index) and a
// RouteNode (one level of the tree; a node where a pattern ends is a leaf).
// Level one branches on the host ("" for host-less patterns), level two on
// the method ("" for method-less), and every level below on one path segment.
// A RouteNode has up to four kinds of children, tried in this order per request:
//
//   literals  segment text -> child, sorted (the pattern said "/users")
//   wild      one child for any single segment ("{id}")
//   end       the leaf for "{$}", reached only by a trailing '/'
//   multi     the leaf for "{rest...}" or a trailing '/', which takes the
//             whole remaining path
//
// A RouteNode whose `route` is set is where a pattern ends. Matching is Go's
// routing_tree.go: a depth-first walk that tries the literal child, then the
// wildcard child, then the multi leaf, backtracking on failure, so "/a/b/c"
// with "/a/b/z" and "/a/{x}/c" registered fails at "z" and then succeeds
// through {x}. The walk visits at most one node per (segment, child kind), and
// a 20-route table answers in tens of nanoseconds; see bench_router.
//
// # Why the first match is the most specific one
//
// Registration rejects every pattern that conflicts with an earlier one
// (router_pattern.cpp). Among non-conflicting patterns that match the same
// request, one is strictly more specific, and at the first segment where
// they differ the more specific one has the narrower kind: a literal beats a
// wildcard, a wildcard beats a multi. Trying kinds narrowest-first therefore
// finds it first. The same argument orders the method level (exact method,
// then GET for HEAD, then method-less) and the host level (the request's host,
// then host-less; "host wins" is a rule, not a consequence of specificity).
//
// # Redirects and 405 (Go's ServeMux.findHandler)
//
// A request path is cleaned before matching; if it was unclean the answer is
// a 301 to the clean path, whether or not it matches anything. If the match
// is not exact (a subtree pattern "/a/" matched "/a/b" by its anonymous
// wildcard, or nothing matched) and the path does not end in '/', we try
// again with a '/' appended; an exact match there means a 301 to "path/", so
// "/a" goes to "/a/" when only "/a/" is registered. Only then does a miss
// become 405 (some method-specific pattern matches the path, or the path plus
// '/') or 404.
//
// # Static routes
//
// Most requests a service sees name a pattern made of literal segments only
// ("GET /plaintext"), and the walk above spends a few hundred instructions
// (method scan, segment split, unescape check, literal search, redirect
// checks) to confirm it. Such patterns also sit in a hash table keyed by
// (method, path), and match() looks the request's method and raw path up
// there first. The key of a string is its length and its first and last
// eight bytes (StaticKey), two loads whatever its length: for a string of
// up to 16 bytes that is all of it, so a probe compares words instead of
// calling memcmp, and only longer strings compare their middle bytes. (The
// first version, a bisection over the table sorted by path, took ~170
// instructions to find "GET /plaintext" among goro-hello's routes, a third
// of them in memcmp calls; the probe takes ~85.) A hit is the walk's
// answer, and a miss falls through to the walk, because a pattern enters
// the table only when:
//   - it names a method and no host, and the tree has no host patterns at
//     all (a host pattern would be tried first), and the request's method
//     is that method (so its tree is the first one consulted; HEAD falling
//     back to GET takes the walk);
//   - its path is clean and its literals hold neither '%' nor '/', so a
//     request path byte-equal to it is clean, splits into the same segments
//     and unescapes to itself: the walk follows literal children all the way
//     (literals are tried first at every level) to this pattern's leaf, and
//     a pattern without a multi is an exact match (no redirect probe).
// The request path must equal the pattern's byte for byte; "/plain%74ext"
// and other spellings take the walk.
//
// # Rejected alternatives
//
// - A linear scan of per-route regexes: O(routes) per request, and the
//   precedence rule would have to be re-derived at match time.
// - A radix tree over raw bytes (httprouter): fast, but wildcards are whole
//   segments matched after unescaping, and "%2F" must not split a segment, so
//   byte-level edges would need escape-aware splitting everywhere.
// - Keying "{$}" as the literal "/" like Go does: a request segment "%2F"
//   unescapes to "/" and would then reach "{$}" routes. `end` is its own slot.
#include "framework/http/router/route_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "framework/http/router/route_path.hpp"
#include "framework/http/router/route_pattern.hpp"

#ifdef NDEBUG
#define GORO_ROUTER_ASSERT(cond, msg) ((void)0)
#else
#define GORO_ROUTER_ASSERT(cond, msg) \
  do {                                \
    if (!(cond)) {                    \
      std::fputs(msg "\n", stderr);   \
      std::abort();                   \
    }                                 \
  } while (0)
#endif

namespace goro::http {

namespace detail {

// The tree's types are members of RouteTree, so they cannot live in an
// anonymous namespace; their names are prefixed to keep them unique in detail.

// Above this many literal children a node is searched by bisection.
inline constexpr std::size_t kRouteLinearSearchMax = 8;

struct RouteNode;

struct RouteEdge {
  std::string key;  // unescaped segment text
  std::unique_ptr<RouteNode> child;
};

struct RouteNode {
  int route = -1;  // the pattern ending here, or -1 for an interior node
  // Set on a multi leaf whose wildcard has a name: only named multis record
  // a value (a trailing '/' is an anonymous one).
  bool records_rest = false;
  std::vector<RouteEdge> literals;  // sorted by key; keys are unique
  std::unique_ptr<RouteNode> wild;
  std::unique_ptr<RouteNode> end;
  std::unique_ptr<RouteNode> multi;

  const RouteNode* find_literal(std::string_view key) const noexcept {
    if (literals.size() <= kRouteLinearSearchMax) {
      for (const RouteEdge& e : literals) {
        if (e.key == key) return e.child.get();
      }
      return nullptr;
    }
    auto it = std::lower_bound(literals.begin(), literals.end(), key,
                               [](const RouteEdge& e, std::string_view k) { return e.key < k; });
    return it != literals.end() && it->key == key ? it->child.get() : nullptr;
  }

  RouteNode* add_literal(std::string_view key) {
    auto it = std::lower_bound(literals.begin(), literals.end(), key,
                               [](const RouteEdge& e, std::string_view k) { return e.key < k; });
    if (it != literals.end() && it->key == key) return it->child.get();
    it = literals.insert(it, RouteEdge{std::string(key), std::make_unique<RouteNode>()});
    return it->child.get();
  }
};

// Room for one more element, growing geometrically: the push that follows
// cannot allocate (or throw).
template <typename T>
void reserve_one(std::vector<T>& v) {
  if (v.size() == v.capacity()) v.reserve(std::max<std::size_t>(8, 2 * v.size()));
}

inline RouteNode* child(std::unique_ptr<RouteNode>& slot) {
  if (!slot) slot = std::make_unique<RouteNode>();
  return slot.get();
}

// The method level under one host.
struct RouteMethods {
  std::vector<std::pair<std::string, std::unique_ptr<RouteNode>>> by_method;
  std::unique_ptr<RouteNode> any_method;

  const RouteNode* find(std::string_view method) const noexcept {
    for (const auto& [name, root] : by_method) {
      if (name == method) return root.get();
    }
    return nullptr;
  }

  RouteNode* root_for(const std::string& method) {
    if (method.empty()) return child(any_method);
    for (auto& [name, root] : by_method) {
      if (name == method) return root.get();
    }
    by_method.emplace_back(method, std::make_unique<RouteNode>());
    return by_method.back().second.get();
  }
};

// A string as the static table keys it ("Static routes"): its length and
// its first and last eight bytes (overlapping below 16 bytes; below eight,
// the first and last four, or three single bytes), so a string of up to 16
// bytes is equal to another exactly when their keys are.
struct StaticKey {
  std::uint64_t head = 0;
  std::uint64_t tail = 0;
  std::size_t size = 0;

  bool operator==(const StaticKey&) const noexcept = default;
};

inline StaticKey static_key(std::string_view s) noexcept {
  StaticKey k;
  k.size = s.size();
  const char* p = s.data();
  const std::size_t n = s.size();
  if (n >= 8) {
    std::memcpy(&k.head, p, 8);
    std::memcpy(&k.tail, p + n - 8, 8);
  } else if (n >= 4) {
    std::uint32_t a = 0;
    std::uint32_t b = 0;
    std::memcpy(&a, p, 4);
    std::memcpy(&b, p + n - 4, 4);
    k.head = a;
    k.tail = b;
  } else if (n > 0) {
    k.head = static_cast<unsigned char>(p[0]) |
             (std::uint64_t{static_cast<unsigned char>(p[n / 2])} << 8) |
             (std::uint64_t{static_cast<unsigned char>(p[n - 1])} << 16);
  }
  return k;
}

struct RouteEntry {
  Pattern pattern;
  std::vector<std::string_view> names;  // wildcard names in order; view `pattern`
};

class RouteTree {
 public:
  int add(std::string_view text);
  // The static table's answer ("Static routes"), else walk()'s.
  void match(std::string_view method, std::string_view host, std::string_view path,
             MatchResult& out) const;

  std::size_t size() const noexcept { return routes_.size(); }
  std::string_view pattern(int id) const { return routes_.at(id)->pattern.text; }

 private:
  // State of one walk. Values are pushed as wildcards are crossed and popped
  // on backtracking; a walk with `record` false (the redirect probe and the
  // 405 scan) only needs the unescape buffer.
  struct Walk {
    PathValues& values;
    bool record;

    std::size_t mark() const noexcept { return values.unescaped_size_; }
    void release(std::size_t m) noexcept { values.unescaped_size_ = m; }

    // The unescaped form of `raw`, in the buffer if it needed unescaping.
    std::string_view unescape(std::string_view raw) noexcept {
      if (raw.find('%') == std::string_view::npos) return raw;
      GORO_ROUTER_ASSERT(values.unescaped_size_ + raw.size() <= values.unescaped_capacity_,
                         "router: unescape buffer sized too small for the path");
      char* dst = values.unescaped_.get() + values.unescaped_size_;
      const std::size_t n = path_unescape(raw, dst);
      if (n == kInvalidEscape) return raw;
      values.unescaped_size_ += n;
      return {dst, n};
    }
  };

  // match() past the static table: the tree walk, redirects and 405. Out of
  // line, so a static hit does not pay for its frame.
  [[gnu::noinline]] void walk(std::string_view method, std::string_view host, std::string_view path,
                              MatchResult& out) const;
  static void prepare(PathValues& v, std::size_t path_size);
  int lookup(std::string_view host, std::string_view method, std::string_view path, Walk& w) const;
  int match_method_and_path(const RouteMethods& trees, std::string_view method,
                            std::string_view path, Walk& w) const;
  int match_path(const RouteNode* n, std::string_view path, Walk& w) const;
  bool is_exact_match(int id, std::string_view path) const noexcept;
  void collect_methods(const RouteMethods& trees, std::string_view path, Walk& w,
                       std::vector<std::string_view>& methods) const;
  std::string allowed_methods(std::string_view host, std::string_view path, PathValues& v,
                              std::string& scratch) const;

  // Whether some pattern ending in '/', {x...} or {$} has `depth` segments.
  // Only such a pattern can match "path/" exactly, and only if its depth is
  // the slash count of "path/", so this spares most requests that a subtree
  // matched the trailing-slash probe. Bit d stands for depth d; the last bit
  // stands for every depth from 63 up.
  bool may_redirect_at(std::size_t depth) const noexcept {
    return (slash_depths_ >> std::min<std::size_t>(depth, 63)) & 1;
  }

  // A pattern for the static table ("Static routes"): its path, or "" when
  // the walk must decide for it.
  static std::string static_path(const Pattern& p);
  // The static table's answer for a request, or -1: take the walk.
  int static_lookup(std::string_view method, std::string_view path) const;

  struct StaticRoute {
    std::string path;
    std::string method;
    int id;
  };
  // One slot of the static table's open addressing (linear probing): the
  // keys of a static_ entry's method and path, and its index (-1: empty).
  struct StaticSlot {
    StaticKey path;
    StaticKey method;
    int route = -1;
  };
  // The slot a (method, path) probe starts at: Fibonacci hashing of the
  // keys, whose top bits index a table of 2^(64 - shift) slots (shift <= 61).
  static std::size_t static_home(const StaticKey& method, const StaticKey& path,
                                 unsigned shift) noexcept {
    const std::uint64_t h = (path.head ^ (path.tail * 0x9E3779B97F4A7C15ULL) ^ method.head ^
                             (std::uint64_t{path.size} << 40)) *
                            0xBF58476D1CE4E5B9ULL;
    return static_cast<std::size_t>(h >> shift);
  }
  // The slots for static_ plus `extra` (not yet in static_, at index
  // static_.size()): a power of two at least twice as many, so a probe
  // always meets an empty slot.
  std::vector<StaticSlot> static_slots_with(const StaticRoute* extra, unsigned& shift) const;
  // Puts static_[index] into `slots` (2^(64 - shift) of them, one empty at
  // least); the probe that finds it starts at its home, as every lookup's.
  static void place_static(std::vector<StaticSlot>& slots, unsigned shift, const StaticRoute& r,
                           std::size_t index) noexcept;
  // Whether a slot whose keys equal the request's is its route: keys cover
  // strings of up to 16 bytes whole; longer ones may differ in between.
  [[gnu::noinline]] bool static_long_equal(const StaticRoute& r, std::string_view method,
                                           std::string_view path) const noexcept {
    return r.path == path && r.method == method;
  }

  std::vector<std::unique_ptr<RouteEntry>> routes_;  // index = id; heap so views stay put
  std::vector<std::pair<std::string, RouteMethods>> by_host_;
  RouteMethods any_host_;
  std::uint64_t slash_depths_ = 0;  // see may_redirect_at
  // Method-specific, host-less, literal-only patterns, in registration
  // order, and their hash table (static_slots_, 2^(64 - static_shift_)
  // slots; empty with static_). Consulted only while by_host_ is empty.
  std::vector<StaticRoute> static_;
  std::vector<StaticSlot> static_slots_;
  std::size_t static_mask_ = 0;  // static_slots_.size() - 1
  unsigned static_shift_ = 64;
};

std::string RouteTree::static_path(const Pattern& p) {
  if (p.method.empty() || !p.host.empty() || p.segments.empty()) return {};
  std::string path;
  for (const Segment& s : p.segments) {
    if (s.kind != Segment::Kind::kLiteral || s.text.find_first_of("%/") != std::string::npos)
      return {};
    path += '/';
    path += s.text;
  }
  return is_clean_path(path) ? path : std::string();
}

std::vector<RouteTree::StaticSlot> RouteTree::static_slots_with(const StaticRoute* extra,
                                                                unsigned& shift) const {
  const std::size_t n = static_.size() + (extra != nullptr ? 1 : 0);
  std::size_t size = 8;
  shift = 61;
  while (size < 2 * n) {
    size *= 2;
    --shift;
  }
  std::vector<StaticSlot> slots(size);
  for (std::size_t i = 0; i < static_.size(); ++i)
    place_static(slots, shift, static_[i], i);
  if (extra != nullptr) place_static(slots, shift, *extra, static_.size());
  return slots;
}

void RouteTree::place_static(std::vector<StaticSlot>& slots, unsigned shift, const StaticRoute& r,
                             std::size_t index) noexcept {
  const StaticKey path = static_key(r.path);
  const StaticKey method = static_key(r.method);
  std::size_t i = static_home(method, path, shift);
  while (slots[i].route >= 0)
    i = (i + 1) & (slots.size() - 1);
  slots[i] = StaticSlot{path, method, static_cast<int>(index)};
}

int RouteTree::static_lookup(std::string_view method, std::string_view path) const {
  if (static_slots_.empty() || !by_host_.empty()) return -1;
  const StaticKey pk = static_key(path);
  const StaticKey mk = static_key(method);
  const bool long_key = path.size() > 16 || method.size() > 16;
  for (std::size_t i = static_home(mk, pk, static_shift_);; i = (i + 1) & static_mask_) {
    const StaticSlot& s = static_slots_[i];
    if (s.route < 0) return -1;
    if (s.path != pk || s.method != mk) continue;
    const StaticRoute& r = static_[static_cast<std::size_t>(s.route)];
    if (long_key && !static_long_equal(r, method, path)) continue;
    return r.id;
  }
}

int RouteTree::add(std::string_view text) {
  Pattern p = parse_pattern(text);
  for (const auto& r : routes_) {
    if (conflicts(p, r->pattern)) {
      throw PatternError(fmt::format("goro/http: pattern \"{}\" conflicts with pattern \"{}\": {}",
                                     p.text, r->pattern.text, describe_conflict(p, r->pattern)));
    }
  }
  // Everything that may throw comes before the tree changes (below, only
  // node allocations may, which leave nodes without a pattern): a pattern
  // that failed to register must not be half there.
  const int id = static_cast<int>(routes_.size());
  StaticRoute fast{static_path(p), p.method, id};  // fast.path empty: not static
  reserve_one(routes_);
  // The table is rebuilt only when it must grow (it doubles then), else the
  // route goes into a free slot below: a rebuild per add made registering
  // n static routes O(n^2) (16,000 took 3.4 s more than as many wildcard
  // routes, whose conflict checks alone are O(n) per add).
  std::vector<StaticSlot> slots;
  unsigned shift = static_shift_;
  bool grow = false;
  if (!fast.path.empty()) {
    reserve_one(static_);
    grow = static_slots_.size() < 2 * (static_.size() + 1);
    if (grow) slots = static_slots_with(&fast, shift);
  }
  auto route = std::make_unique<RouteEntry>();
  route->pattern = std::move(p);
  for (const Segment& s : route->pattern.segments) {
    const bool wildcard = s.kind == Segment::Kind::kWild || s.kind == Segment::Kind::kMulti;
    if (wildcard && !s.text.empty()) route->names.push_back(s.text);
  }

  const Pattern& pat = route->pattern;
  RouteMethods* trees = &any_host_;
  if (!pat.host.empty()) {
    auto it = std::find_if(by_host_.begin(), by_host_.end(),
                           [&](const auto& h) { return h.first == pat.host; });
    trees = it != by_host_.end() ? &it->second
                                 : &by_host_.emplace_back(pat.host, RouteMethods{}).second;
  }
  RouteNode* n = trees->root_for(pat.method);
  for (const Segment& s : pat.segments) {
    switch (s.kind) {
      case Segment::Kind::kLiteral:
        n = n->add_literal(s.text);
        break;
      case Segment::Kind::kWild:
        n = child(n->wild);
        break;
      case Segment::Kind::kEnd:
        n = child(n->end);
        break;
      case Segment::Kind::kMulti:
        n = child(n->multi);
        n->records_rest = !s.text.empty();
        break;
    }
  }
  // Two patterns ending on one node have equivalent paths, methods and
  // hosts, which conflicts() rejected above.
  GORO_ROUTER_ASSERT(n->route < 0, "router: two patterns on one leaf passed the conflict check");
  n->route = id;
  const Segment::Kind last = pat.segments.back().kind;
  if (last == Segment::Kind::kMulti || last == Segment::Kind::kEnd) {
    slash_depths_ |= std::uint64_t{1} << std::min<std::size_t>(pat.segments.size(), 63);
  }
  if (!fast.path.empty()) {
    static_.push_back(std::move(fast));  // capacity reserved: no allocation
    if (grow) {
      static_slots_.swap(slots);
      static_mask_ = static_slots_.size() - 1;
      static_shift_ = shift;
    } else {
      place_static(static_slots_, static_shift_, static_.back(), static_.size() - 1);
    }
    // A route missing from the table would still be found by the walk, only
    // slower: checked builds make sure the table has it.
    GORO_ROUTER_ASSERT(
        !by_host_.empty() || static_lookup(static_.back().method, static_.back().path) == id,
        "router: a static route is missing from the static table");
  }
  routes_.push_back(std::move(route));  // capacity reserved
  return id;
}

// Sizes the unescape buffer for the whole match before any value points
// into it. Along one path through the tree, live unescaped values come from
// disjoint parts of the path, so one match needs at most path_size bytes; the
// redirect probe runs on top of a finished match with one byte more.
void RouteTree::prepare(PathValues& v, std::size_t path_size) {
  const std::size_t need = 2 * path_size + 2;
  if (v.unescaped_capacity_ < need) {
    v.unescaped_ = std::make_unique_for_overwrite<char[]>(need);
    v.unescaped_capacity_ = need;
  }
  v.unescaped_size_ = 0;
  v.entries_.clear();
}

int RouteTree::lookup(std::string_view host, std::string_view method, std::string_view path,
                      Walk& w) const {
  if (!host.empty()) {
    for (const auto& [name, trees] : by_host_) {
      if (name != host) continue;
      const int id = match_method_and_path(trees, method, path, w);
      if (id >= 0) return id;
      break;
    }
  }
  return match_method_and_path(any_host_, method, path, w);
}

int RouteTree::match_method_and_path(const RouteMethods& trees, std::string_view method,
                                     std::string_view path, Walk& w) const {
  if (const RouteNode* n = trees.find(method)) {
    if (const int id = match_path(n, path, w); id >= 0) return id;
  }
  if (method == "HEAD") {
    if (const RouteNode* n = trees.find("GET")) {
      if (const int id = match_path(n, path, w); id >= 0) return id;
    }
  }
  return trees.any_method ? match_path(trees.any_method.get(), path, w) : -1;
}

// `path` is empty or starts with '/'. On failure the walk's values and buffer
// are as they were on entry.
int RouteTree::match_path(const RouteNode* n, std::string_view path, Walk& w) const {
  if (path.empty()) return n->route;
  if (path.size() == 1) {
    // The trailing slash: {$} first, then a multi (with an empty value). A
    // single wildcard never matches it.
    if (n->end) return n->end->route;
    if (!n->multi) return -1;
    if (w.record && n->multi->records_rest) w.values.entries_.push_back({{}, {}});
    return n->multi->route;
  }
  const std::size_t slash = std::min(path.find('/', 1), path.size());
  const std::string_view rest = path.substr(slash);
  const std::size_t mark = w.mark();
  const std::string_view seg = w.unescape(path.substr(1, slash - 1));
  if (!n->literals.empty()) {
    if (const RouteNode* c = n->find_literal(seg)) {
      if (const int id = match_path(c, rest, w); id >= 0) return id;
    }
  }
  if (n->wild) {
    if (w.record) w.values.entries_.push_back({{}, seg});
    if (const int id = match_path(n->wild.get(), rest, w); id >= 0) return id;
    if (w.record) w.values.entries_.pop_back();
  }
  w.release(mark);
  if (!n->multi) return -1;
  if (w.record && n->multi->records_rest) {
    w.values.entries_.push_back({{}, w.unescape(path.substr(1))});
  }
  return n->multi->route;
}

// Go's exactMatch: the pattern matched without its trailing multi swallowing
// any segment. "/a/" matches "/a/" exactly but "/a/b" only through the multi.
bool RouteTree::is_exact_match(int id, std::string_view path) const noexcept {
  if (id < 0) return false;
  const Pattern& p = routes_[id]->pattern;
  if (!p.ends_in_multi()) return true;
  if (path.empty() || path.back() != '/') return false;
  return p.segments.size() == static_cast<std::size_t>(std::count(path.begin(), path.end(), '/'));
}

void RouteTree::collect_methods(const RouteMethods& trees, std::string_view path, Walk& w,
                                std::vector<std::string_view>& methods) const {
  // Method-less patterns are not consulted: one that matched would have
  // matched the request too.
  for (const auto& [name, root] : trees.by_method) {
    const std::size_t mark = w.mark();
    const bool hit = match_path(root.get(), path, w) >= 0;
    w.release(mark);
    if (hit && std::find(methods.begin(), methods.end(), name) == methods.end()) {
      methods.push_back(name);
    }
  }
}

std::string RouteTree::allowed_methods(std::string_view host, std::string_view path, PathValues& v,
                                       std::string& scratch) const {
  Walk w{v, false};
  std::vector<std::string_view> methods;
  auto scan = [&](std::string_view p) {
    if (!host.empty()) {
      for (const auto& [name, trees] : by_host_) {
        if (name == host) collect_methods(trees, p, w, methods);
      }
    }
    collect_methods(any_host_, p, w, methods);
  };
  scan(path);
  // The redirect step would also have tried the path with a '/' appended.
  if (path.back() != '/') {
    scratch.assign(path);
    scratch.push_back('/');
    scan(scratch);
    scratch.clear();
  }
  if (std::find(methods.begin(), methods.end(), "GET") != methods.end() &&
      std::find(methods.begin(), methods.end(), "HEAD") == methods.end()) {
    methods.push_back("HEAD");
  }
  std::sort(methods.begin(), methods.end());
  std::string allow;
  for (std::string_view m : methods) {
    if (!allow.empty()) allow += ", ";
    allow += m;
  }
  return allow;
}

void RouteTree::match(std::string_view method, std::string_view host, std::string_view path,
                      MatchResult& out) const {
  // CONNECT's target is an authority, not a path; Go leaves both alone.
  if (method != "CONNECT") {
    if (const int id = static_lookup(method, path); id >= 0) {
      out.kind = MatchResult::Kind::kFound;
      out.id = id;
      out.pattern = routes_[id]->pattern.text;
      out.allow.clear();
      out.redirect_to.clear();
      // No values, so no unescape buffer either (the walk sizes it).
      out.values.entries_.clear();
      out.values.unescaped_size_ = 0;
      return;
    }
  }
  walk(method, host, path, out);
}

void RouteTree::walk(std::string_view method, std::string_view host, std::string_view path,
                     MatchResult& out) const {
  out.kind = MatchResult::Kind::kNotFound;
  out.id = -1;
  out.pattern = {};
  out.allow.clear();
  out.redirect_to.clear();

  const bool is_connect = method == "CONNECT";
  std::string cleaned;  // non-empty iff the path was unclean
  std::string_view p = path;
  if (!is_connect) {
    // Only host patterns look at the host (lookup skips it without them).
    if (!by_host_.empty()) host = strip_host_port(host);
    if (!is_clean_path(path)) {
      cleaned = clean_path(path);
      p = cleaned;
    }
  }
  prepare(out.values, p.size());
  if (p.empty() || p[0] != '/') return;  // only a CONNECT gets here

  Walk walk{out.values, true};
  const int id = lookup(host, method, p, walk);
  if (!is_exact_match(id, p) && p.back() != '/' &&
      may_redirect_at(static_cast<std::size_t>(std::count(p.begin(), p.end(), '/')) + 1)) {
    out.redirect_to.assign(p);
    out.redirect_to.push_back('/');
    Walk probe{out.values, false};
    const std::size_t mark = probe.mark();
    const int with_slash = lookup(host, method, out.redirect_to, probe);
    probe.release(mark);
    if (is_exact_match(with_slash, out.redirect_to)) {
      out.values.entries_.clear();
      out.kind = MatchResult::Kind::kRedirect;
      return;
    }
    out.redirect_to.clear();
  }
  if (!cleaned.empty()) {
    out.values.entries_.clear();
    out.kind = MatchResult::Kind::kRedirect;
    out.redirect_to = std::move(cleaned);
    return;
  }
  if (id >= 0) {
    const RouteEntry& r = *routes_[id];
    GORO_ROUTER_ASSERT(r.names.size() == out.values.entries_.size(),
                       "router: wildcard values do not line up with the pattern's names");
    for (std::size_t i = 0; i < r.names.size(); ++i)
      out.values.entries_[i].name = r.names[i];
    out.kind = MatchResult::Kind::kFound;
    out.id = id;
    out.pattern = r.pattern.text;
    return;
  }
  out.allow = allowed_methods(host, p, out.values, out.redirect_to);
  if (!out.allow.empty()) out.kind = MatchResult::Kind::kMethodNotAllowed;
}

}  // namespace detail

// PathValues ---------------------------------------------------------------

const PathValues::Entry* PathValues::find(std::string_view name) const noexcept {
  for (const Entry& e : entries_) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

std::string_view PathValues::get(std::string_view name) const noexcept {
  const Entry* e = find(name);
  return e != nullptr ? e->value : std::string_view{};
}

// RouteTable ---------------------------------------------------------------

RouteTable::RouteTable() : tree_(std::make_unique<detail::RouteTree>()) {}
RouteTable::~RouteTable() = default;
RouteTable::RouteTable(RouteTable&&) noexcept = default;
RouteTable& RouteTable::operator=(RouteTable&&) noexcept = default;

int RouteTable::add(std::string_view pattern) {
  return tree_->add(pattern);
}

void RouteTable::match(std::string_view method, std::string_view host, std::string_view path,
                       MatchResult& out) const {
  tree_->match(method, host, path, out);
}

MatchResult RouteTable::match(std::string_view method, std::string_view host,
                              std::string_view path) const {
  MatchResult out;
  tree_->match(method, host, path, out);
  return out;
}

std::size_t RouteTable::size() const noexcept {
  return tree_->size();
}

std::string_view RouteTable::pattern(int id) const {
  return tree_->pattern(id);
}

}  // namespace goro::http
