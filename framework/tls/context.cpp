// tls::Context: a Config compiled into OpenSSL SSL_CTXs.
//
// # What every context sets (docs/DESIGN.md "TLS")
// TLS 1.2 to 1.3 only; renegotiation off (SSL_OP_NO_RENEGOTIATION: OpenSSL
// 3.0 already refuses a client's, this refuses ours too); no compression
// (CRIME); TLS 1.2 suites ECDHE + AEAD only, the server's order (all are
// strong, and AES-128-GCM is the cheapest; TLS 1.3 likewise); groups
// X25519, P-256, P-384.
// SSL_MODE_RELEASE_BUFFERS gives the 34 KiB of read and write buffers back
// while a connection is idle (the cost is an allocation per busy spell);
// partial writes and moving write buffers, because the write loop retries
// from wherever the last record ended; read-ahead, so a record arrives in
// one read(2) rather than a header read and a body read.
//
// # Certificates and SNI
// Each certificate gets its own SSL_CTX, configured alike; connections start
// on the first, and the servername callback moves a connection whose SNI
// matches another certificate's names to that one's SSL_CTX (nginx's way;
// the session cache and the ticket keys stay the first context's, where
// OpenSSL looks for them). A name matches exactly, or "*.example.com"
// matches one label; the first certificate answers everything else, as Go.
//
// # Ticket keys
// Stateless tickets are encrypted with a key of ours rather than the
// SSL_CTX's own random one, so that a reload (a new Context) keeps
// resuming the sessions of the old one. The newest key encrypts; a key is
// newest for ticket_key_rotation, then decrypts (and the ticket is renewed
// under the newest) for session_timeout more, which is how long OpenSSL
// lets a session live anyway. The keys are random per process: several
// processes behind one balancer do not resume each other's tickets.
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <system_error>

#include "framework/tls/tls_impl.hpp"
#include "goro/detail/thread_lock.hpp"

namespace goro::tls {

namespace detail {

namespace {

constexpr const char* kDefaultCiphers12 =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
// OpenSSL's three, AES-128 first (the cheapest; Go's order with AES hardware).
constexpr const char* kCiphers13 =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";
constexpr const char* kGroups = "X25519:P-256:P-384";
constexpr unsigned char kSessionIdContext[] = "goro";

// "PEM routines: no start line" for the oldest error in the queue (then
// cleared), or `fallback`.
std::string drain_errors(std::string_view fallback) {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return std::string(fallback);
  const char* lib = ERR_lib_error_string(e);
  const char* reason = ERR_reason_error_string(e);
  if (reason == nullptr) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    return buf;
  }
  return lib != nullptr ? fmt::format("{}: {}", lib, reason) : std::string(reason);
}

// A PEM input: the text itself, or a file's contents.
bool pem_text(const std::string& pem, const std::string& file, std::string_view what,
              std::string* out, std::string* err) {
  if (!pem.empty()) {
    *out = pem;
    return true;
  }
  if (file.empty()) {
    *err = fmt::format("{}: no file and no PEM given", what);
    return false;
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    *err = fmt::format("{} {}: {}", what, file,
                       std::error_code(errno, std::generic_category()).message());
    return false;
  }
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) {
    *err = fmt::format("{} {}: read error", what, file);
    return false;
  }
  return true;
}

std::string source_name(const std::string& pem, const std::string& file, std::string_view field) {
  return pem.empty() ? fmt::format("{} {}", field, file) : fmt::format("{} (PEM)", field);
}

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;

BioPtr mem_bio(const std::string& text) {
  return BioPtr(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

// Every certificate in a PEM text, in order.
std::vector<X509Ptr> read_certs(const std::string& text) {
  std::vector<X509Ptr> certs;
  BioPtr b = mem_bio(text);
  if (!b) return certs;
  while (X509* x = PEM_read_bio_X509(b.get(), nullptr, nullptr, nullptr))
    certs.emplace_back(x);
  // The loop ends on "no start line" after the last one: not an error.
  const unsigned long e = ERR_peek_last_error();
  if (!certs.empty() && ERR_GET_REASON(e) == PEM_R_NO_START_LINE) ERR_clear_error();
  return certs;
}

// A key is never asked for a passphrase (OpenSSL's default callback would
// prompt on the terminal): an encrypted key fails to load.
int no_passphrase(char*, int, int, void*) {
  return -1;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// The leaf's DNS names: subjectAltName, else the common name.
std::vector<std::string> dns_names(X509* leaf) {
  std::vector<std::string> names;
  auto* sans =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(leaf, NID_subject_alt_name, nullptr, nullptr));
  if (sans != nullptr) {
    for (int i = 0; i < sk_GENERAL_NAME_num(sans); ++i) {
      const GENERAL_NAME* g = sk_GENERAL_NAME_value(sans, i);
      if (g->type != GEN_DNS) continue;
      const ASN1_STRING* s = g->d.dNSName;
      names.push_back(
          lower(std::string_view(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                                 static_cast<std::size_t>(ASN1_STRING_length(s)))));
    }
    GENERAL_NAMES_free(sans);
  }
  if (names.empty()) {
    char cn[256];
    const int n =
        X509_NAME_get_text_by_NID(X509_get_subject_name(leaf), NID_commonName, cn, sizeof cn);
    if (n > 0) names.push_back(lower(std::string_view(cn, static_cast<std::size_t>(n))));
  }
  return names;
}

bool load_certificate(SSL_CTX* ctx, const Certificate& c, std::string_view label,
                      std::vector<std::string>* names, std::string* err) {
  std::string cert_text, key_text;
  if (!pem_text(c.cert_pem, c.cert_file, fmt::format("{}cert_file", label), &cert_text, err) ||
      !pem_text(c.key_pem, c.key_file, fmt::format("{}key_file", label), &key_text, err)) {
    return false;
  }
  const std::string cert_src =
      source_name(c.cert_pem, c.cert_file, fmt::format("{}cert_file", label));
  const std::string key_src = source_name(c.key_pem, c.key_file, fmt::format("{}key_file", label));
  std::vector<X509Ptr> certs = read_certs(cert_text);
  if (certs.empty()) {
    *err = fmt::format("{}: {}", cert_src, drain_errors("no certificate found"));
    return false;
  }
  BioPtr kb = mem_bio(key_text);
  EVP_PKEY* key = kb ? PEM_read_bio_PrivateKey(kb.get(), nullptr, no_passphrase, nullptr) : nullptr;
  if (key == nullptr) {
    *err = fmt::format("{}: {}", key_src, drain_errors("no private key found"));
    return false;
  }
  STACK_OF(X509)* chain = sk_X509_new_null();
  for (std::size_t i = 1; chain != nullptr && i < certs.size(); ++i)
    sk_X509_push(chain, certs[i].get());
  const int ok = chain != nullptr && SSL_CTX_use_cert_and_key(ctx, certs[0].get(), key, chain, 1);
  sk_X509_free(chain);  // the context took its own references
  EVP_PKEY_free(key);
  if (!ok) {
    *err = fmt::format("{} and {}: {}", cert_src, key_src,
                       drain_errors("the key does not match the certificate"));
    return false;
  }
  *names = dns_names(certs[0].get());
  return true;
}

// Trust anchors from PEM text or a file into the context's store.
bool load_trust(SSL_CTX* ctx, const std::string& pem, const std::string& file,
                std::string_view field, bool client_ca_list, std::string* err) {
  std::string text;
  if (!pem_text(pem, file, field, &text, err)) return false;
  std::vector<X509Ptr> certs = read_certs(text);
  if (certs.empty()) {
    *err =
        fmt::format("{}: {}", source_name(pem, file, field), drain_errors("no certificate found"));
    return false;
  }
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  for (const X509Ptr& x : certs) {
    if (X509_STORE_add_cert(store, x.get()) != 1) {
      *err = fmt::format("{}: {}", source_name(pem, file, field), drain_errors("bad CA"));
      return false;
    }
    // The CA names a server sends in its CertificateRequest, so a client
    // with several certificates picks the right one.
    if (client_ca_list) SSL_CTX_add_client_CA(ctx, x.get());
  }
  return true;
}

// ALPN, server side: the first of our protocols the client offers.
int select_alpn(SSL* /*ssl*/, const unsigned char** out, unsigned char* outlen,
                const unsigned char* in, unsigned int inlen, void* arg) {
  const auto* impl = static_cast<const Context::Impl*>(arg);
  const std::string& ours = impl->alpn_wire;
  for (std::size_t i = 0; i < ours.size(); i += 1 + static_cast<unsigned char>(ours[i])) {
    const std::string_view want(ours.data() + i + 1, static_cast<unsigned char>(ours[i]));
    for (unsigned int j = 0; j < inlen; j += 1 + in[j]) {
      if (j + 1 + in[j] > inlen) break;
      if (std::string_view(reinterpret_cast<const char*>(in + j + 1), in[j]) == want) {
        *out = in + j + 1;
        *outlen = in[j];
        return SSL_TLSEXT_ERR_OK;
      }
    }
  }
  return SSL_TLSEXT_ERR_ALERT_FATAL;  // no_application_protocol, as Go
}

int on_servername(SSL* ssl, int* /*alert*/, void* arg) {
  const auto* impl = static_cast<const Context::Impl*>(arg);
  const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  if (name == nullptr) return SSL_TLSEXT_ERR_NOACK;
  SSL_CTX* want = impl->ctx_for_name(name);
  if (want != SSL_get_SSL_CTX(ssl)) SSL_set_SSL_CTX(ssl, want);
  return SSL_TLSEXT_ERR_OK;
}

const EVP_CIPHER* ticket_cipher() {
  static EVP_CIPHER* c = EVP_CIPHER_fetch(nullptr, "AES-256-CBC", nullptr);  // never freed
  return c;
}

bool set_ticket_mac(EVP_MAC_CTX* hctx, TicketKeys::Key& k) {
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_octet_string("key", k.hmac.data(), k.hmac.size()),
      OSSL_PARAM_construct_utf8_string("digest", digest, 0),
      OSSL_PARAM_construct_end(),
  };
  return EVP_MAC_CTX_set_params(hctx, params) == 1;
}

int on_ticket_key(SSL* ssl, unsigned char key_name[16], unsigned char* iv, EVP_CIPHER_CTX* ectx,
                  EVP_MAC_CTX* hctx, int enc) {
  const auto* impl = static_cast<const Context::Impl*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
  if (impl == nullptr || !impl->tickets || ticket_cipher() == nullptr) return -1;
  TicketKeys::Key k;
  if (enc == 1) {
    if (!impl->tickets->current(&k)) return -1;
    std::memcpy(key_name, k.name.data(), k.name.size());
    if (RAND_bytes(iv, EVP_CIPHER_get_iv_length(ticket_cipher())) != 1) return -1;
    if (EVP_EncryptInit_ex(ectx, ticket_cipher(), nullptr, k.aes.data(), iv) != 1) return -1;
    return set_ticket_mac(hctx, k) ? 1 : -1;
  }
  bool is_current = false;
  if (!impl->tickets->find(key_name, &k, &is_current)) return 0;  // unknown: full handshake
  if (!set_ticket_mac(hctx, k)) return -1;
  if (EVP_DecryptInit_ex(ectx, ticket_cipher(), nullptr, k.aes.data(), iv) != 1) return -1;
  // 2: issue a new ticket. Under an older key, always; in TLS 1.3, after
  // every resumption: OpenSSL's clients use a TLS 1.3 session once, so
  // without a fresh ticket every other connection would be a full
  // handshake (Go's and nginx's servers send one each time too).
  return is_current && SSL_version(ssl) != TLS1_3_VERSION ? 1 : 2;
}

// The wire form of an ALPN list, or an error for a bad name.
bool alpn_wire(const std::vector<std::string>& protos, std::string* out, std::string* err) {
  out->clear();
  for (const std::string& p : protos) {
    if (p.empty() || p.size() > 255) {
      *err = fmt::format("alpn: protocol name \"{}\" must be 1 to 255 bytes", p);
      return false;
    }
    out->push_back(static_cast<char>(p.size()));
    out->append(p);
  }
  return true;
}

// The settings every SSL_CTX of a Config shares (see the file comment).
bool configure(SSL_CTX* ctx, const Config& cfg, Context::Impl* impl, std::string* err) {
  if (cfg.min_version < Version::tls12 || cfg.max_version < cfg.min_version) {
    *err = "min_version/max_version: TLS 1.2 <= min_version <= max_version <= TLS 1.3";
    return false;
  }
  SSL_CTX_set_min_proto_version(ctx, static_cast<int>(cfg.min_version));
  SSL_CTX_set_max_proto_version(ctx, static_cast<int>(cfg.max_version));
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF |
                               SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE |
                            SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_read_ahead(ctx, 1);
  SSL_CTX_set_app_data(ctx, impl);
  const std::string ciphers = cfg.ciphers_tls12.empty() ? kDefaultCiphers12 : cfg.ciphers_tls12;
  if (SSL_CTX_set_cipher_list(ctx, ciphers.c_str()) != 1) {
    *err = fmt::format("ciphers_tls12 \"{}\": {}", ciphers, drain_errors("no usable cipher"));
    return false;
  }
  if (SSL_CTX_set_ciphersuites(ctx, kCiphers13) != 1) {
    *err = fmt::format("TLS 1.3 cipher suites: {}", drain_errors("unsupported"));
    return false;
  }
  if (SSL_CTX_set1_groups_list(ctx, kGroups) != 1) {
    *err = fmt::format("groups: {}", drain_errors("unsupported"));
    return false;
  }
  if (!impl->server) {
    if (!impl->alpn_wire.empty() &&
        SSL_CTX_set_alpn_protos(ctx, reinterpret_cast<const unsigned char*>(impl->alpn_wire.data()),
                                static_cast<unsigned int>(impl->alpn_wire.size())) != 0) {
      *err = fmt::format("alpn: {}", drain_errors("rejected"));
      return false;
    }
    return true;
  }
  if (!impl->alpn_wire.empty()) SSL_CTX_set_alpn_select_cb(ctx, select_alpn, impl);
  SSL_CTX_set_session_id_context(ctx, kSessionIdContext, sizeof kSessionIdContext - 1);
  SSL_CTX_set_timeout(ctx, static_cast<long>(cfg.session_timeout.count()));
  if (cfg.session_cache_size > 0) {
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
    SSL_CTX_sess_set_cache_size(ctx, static_cast<long>(cfg.session_cache_size));
  } else {
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  }
  if (cfg.session_tickets) {
    SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, on_ticket_key);
    SSL_CTX_set_num_tickets(ctx, 1);  // one per handshake, as Go's server
  } else {
    // TLS 1.2: session ids only; TLS 1.3: stateful tickets out of the cache,
    // or none without one.
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
    if (cfg.session_cache_size == 0) SSL_CTX_set_num_tickets(ctx, 0);
  }
  if (cfg.client_auth != ClientAuth::none) {
    if (!load_trust(ctx, cfg.client_ca_pem, cfg.client_ca_file, "client_ca_file", true, err))
      return false;
    int mode = SSL_VERIFY_PEER;
    if (cfg.client_auth == ClientAuth::require) mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    SSL_CTX_set_verify(ctx, mode, nullptr);
  }
  return true;
}

struct CtxFree {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};

}  // namespace

bool TicketKeys::rotate_locked(std::chrono::steady_clock::time_point now) {
  Key k;
  if (RAND_bytes(k.name.data(), static_cast<int>(k.name.size())) != 1 ||
      RAND_bytes(k.aes.data(), static_cast<int>(k.aes.size())) != 1 ||
      RAND_bytes(k.hmac.data(), static_cast<int>(k.hmac.size())) != 1) {
    ERR_clear_error();
    return false;
  }
  k.created = now;
  keys_.insert(keys_.begin(), k);
  // A key decrypts until `rotation` (while newest) + `lifetime` after it
  // was made.
  std::erase_if(keys_, [&](const Key& old) { return now - old.created >= rotation_ + lifetime_; });
  return true;
}

bool TicketKeys::current(Key* out) {
  const auto now = std::chrono::steady_clock::now();
  goro::detail::ThreadLockGuard lock(mu_);
  if ((keys_.empty() || now - keys_.front().created >= rotation_) && !rotate_locked(now))
    return false;
  *out = keys_.front();
  return true;
}

bool TicketKeys::find(const unsigned char* name, Key* out, bool* is_current) {
  const auto now = std::chrono::steady_clock::now();
  goro::detail::ThreadLockGuard lock(mu_);
  for (std::size_t i = 0; i < keys_.size(); ++i) {
    const Key& k = keys_[i];
    if (std::memcmp(k.name.data(), name, k.name.size()) != 0) continue;
    if (now - k.created >= rotation_ + lifetime_) return false;
    *out = k;
    *is_current = i == 0 && now - k.created < rotation_;
    return true;
  }
  return false;
}

}  // namespace detail

Context::Impl::~Impl() {
  for (SSL_CTX* c : ctxs)
    SSL_CTX_free(c);
}

SSL_CTX* Context::Impl::ctx_for_name(std::string_view name) const {
  const std::string want = detail::lower(name);
  const std::size_t dot = want.find('.');
  std::string wildcard;  // "*.example.com" for "www.example.com"
  if (dot != std::string::npos) {
    wildcard.push_back('*');
    wildcard.append(want, dot);
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    for (const std::string& n : names[i]) {
      if (n == want || (!wildcard.empty() && n == wildcard)) return ctxs[i];
    }
  }
  return ctxs[0];
}

Context::Context(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Context::~Context() = default;

bool Context::is_server() const {
  return impl_->server;
}

std::vector<std::vector<std::string>> Context::certificate_names() const {
  return impl_->names;
}

ContextResult Context::server(const Config& cfg, const std::shared_ptr<const Context>& previous) {
  ContextResult res;
  if (cfg.certificates.empty()) {
    res.error = "certificates: a server needs at least one certificate and key";
    return res;
  }
  auto impl = std::make_unique<Impl>();
  impl->server = true;
  if (!detail::alpn_wire(cfg.alpn, &impl->alpn_wire, &res.error)) return res;
  if (cfg.session_tickets) {
    if (previous && previous->impl_->tickets) {
      impl->tickets = previous->impl_->tickets;
    } else {
      impl->tickets =
          std::make_shared<detail::TicketKeys>(cfg.ticket_key_rotation, cfg.session_timeout);
    }
  }
  for (std::size_t i = 0; i < cfg.certificates.size(); ++i) {
    std::unique_ptr<SSL_CTX, detail::CtxFree> ctx(SSL_CTX_new(TLS_server_method()));
    if (!ctx) {
      res.error = detail::drain_errors("SSL_CTX_new failed");
      return res;
    }
    const std::string label =
        cfg.certificates.size() == 1 ? std::string() : fmt::format("certificate {}: ", i + 1);
    std::vector<std::string> names;
    if (!detail::configure(ctx.get(), cfg, impl.get(), &res.error) ||
        !detail::load_certificate(ctx.get(), cfg.certificates[i], label, &names, &res.error)) {
      return res;
    }
    if (cfg.certificates.size() > 1) {
      SSL_CTX_set_tlsext_servername_callback(ctx.get(), detail::on_servername);
      SSL_CTX_set_tlsext_servername_arg(ctx.get(), impl.get());
    }
    impl->ctxs.push_back(ctx.release());
    impl->names.push_back(std::move(names));
  }
  res.context = std::shared_ptr<const Context>(new Context(std::move(impl)));
  return res;
}

ContextResult Context::client(const Config& cfg) {
  ContextResult res;
  auto impl = std::make_unique<Impl>();
  impl->server = false;
  if (!detail::alpn_wire(cfg.alpn, &impl->alpn_wire, &res.error)) return res;
  std::unique_ptr<SSL_CTX, detail::CtxFree> ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) {
    res.error = detail::drain_errors("SSL_CTX_new failed");
    return res;
  }
  if (!detail::configure(ctx.get(), cfg, impl.get(), &res.error)) return res;
  if (cfg.certificates.size() > 1) {
    res.error = "certificates: a client sends at most one certificate";
    return res;
  }
  std::vector<std::string> names;
  if (cfg.certificates.size() == 1 &&
      !detail::load_certificate(ctx.get(), cfg.certificates[0], "", &names, &res.error)) {
    return res;
  }
  impl->verify_peer = !cfg.insecure_skip_verify;
  if (impl->verify_peer) {
    if (!cfg.ca_pem.empty() || !cfg.ca_file.empty()) {
      if (!detail::load_trust(ctx.get(), cfg.ca_pem, cfg.ca_file, "ca_file", false, &res.error))
        return res;
    } else if (SSL_CTX_set_default_verify_paths(ctx.get()) != 1) {
      res.error = fmt::format("the system trust store: {}", detail::drain_errors("not found"));
      return res;
    }
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  }
  impl->ctxs.push_back(ctx.release());
  res.context = std::shared_ptr<const Context>(new Context(std::move(impl)));
  return res;
}

}  // namespace goro::tls
