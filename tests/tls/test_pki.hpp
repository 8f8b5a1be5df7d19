// A throwaway PKI for the TLS tests: a CA and certificates it issues, made
// with OpenSSL's API in memory (ECDSA P-256, SHA-256, valid from an hour ago
// for a day), as PEM text, and written to files for the command-line
// clients (curl, openssl s_client, Python, Go).
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace goro_test {

struct KeyPair {
  std::string cert_pem;
  std::string key_pem;
};

class TestPki {
 public:
  explicit TestPki(const std::string& ca_name = "goro test CA") {
    ca_key_ = new_key();
    ca_cert_ = X509_new();
    fill(ca_cert_, ca_name, ca_key_, nullptr, nullptr);
    ext(ca_cert_, ca_cert_, NID_basic_constraints, "critical,CA:TRUE");
    ext(ca_cert_, ca_cert_, NID_key_usage, "critical,keyCertSign,cRLSign");
    ext(ca_cert_, ca_cert_, NID_subject_key_identifier, "hash");
    if (X509_sign(ca_cert_, ca_key_, EVP_sha256()) == 0) throw std::runtime_error("sign CA");
    ca_.cert_pem = pem(ca_cert_);
    ca_.key_pem = pem(ca_key_);
  }
  ~TestPki() {
    X509_free(ca_cert_);
    EVP_PKEY_free(ca_key_);
  }
  TestPki(const TestPki&) = delete;
  TestPki& operator=(const TestPki&) = delete;

  const KeyPair& ca() const { return ca_; }

  // A leaf for `cn` with these subjectAltNames ("DNS:localhost",
  // "IP:127.0.0.1"); a server certificate, or a client one.
  KeyPair issue(const std::string& cn, const std::string& sans, bool client = false,
                int days_valid = 1) const {
    EVP_PKEY* key = new_key();
    X509* x = X509_new();
    fill(x, cn, key, ca_cert_, nullptr, days_valid);
    ext(x, ca_cert_, NID_basic_constraints, "critical,CA:FALSE");
    ext(x, ca_cert_, NID_key_usage, "critical,digitalSignature");
    ext(x, ca_cert_, NID_ext_key_usage, client ? "clientAuth" : "serverAuth");
    if (!sans.empty()) ext(x, ca_cert_, NID_subject_alt_name, sans.c_str());
    ext(x, ca_cert_, NID_authority_key_identifier, "keyid");
    if (X509_sign(x, ca_key_, EVP_sha256()) == 0) throw std::runtime_error("sign leaf");
    KeyPair kp{pem(x), pem(key)};
    X509_free(x);
    EVP_PKEY_free(key);
    return kp;
  }

  static void write_file(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + path);
  }

 private:
  static EVP_PKEY* new_key() {
    EVP_PKEY* k = EVP_EC_gen("P-256");
    if (k == nullptr) throw std::runtime_error("EVP_EC_gen");
    return k;
  }

  static void fill(X509* x, const std::string& cn, EVP_PKEY* key, X509* issuer, void*,
                   int days_valid = 3650) {
    X509_set_version(x, 2);
    unsigned char serial[8];
    RAND_bytes(serial, sizeof serial);
    serial[0] &= 0x7f;
    BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
    BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x));
    BN_free(bn);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400L * days_valid);
    X509_NAME* name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("goro tests"), -1, -1, 0);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
    X509_set_issuer_name(x, issuer != nullptr ? X509_get_subject_name(issuer) : name);
    X509_set_pubkey(x, key);
  }

  static void ext(X509* x, X509* issuer, int nid, const char* value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, x, nullptr, nullptr, 0);
    X509_EXTENSION* e = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    if (e == nullptr) throw std::runtime_error(std::string("extension ") + value);
    X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
  }

  static std::string pem(X509* x) {
    BIO* b = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(b, x);
    return drain(b);
  }
  static std::string pem(EVP_PKEY* k) {
    BIO* b = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(b, k, nullptr, nullptr, 0, nullptr, nullptr);
    return drain(b);
  }
  static std::string drain(BIO* b) {
    char* data = nullptr;
    const long n = BIO_get_mem_data(b, &data);
    std::string s(data, static_cast<std::size_t>(n));
    BIO_free(b);
    return s;
  }

  EVP_PKEY* ca_key_ = nullptr;
  X509* ca_cert_ = nullptr;
  KeyPair ca_;
};

// A fresh directory under $TMPDIR (or /tmp), removed with its files.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base != nullptr ? base : "/tmp") + "/goro-tls-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;  // best effort: a leftover temp directory fails nothing
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace goro_test
