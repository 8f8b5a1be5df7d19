// wrk_tls.c: an LD_PRELOAD shim for Debian's wrk (4.1.0, dynamically linked
// to libssl.so.3) used by the HTTPS scenarios of loadtest/http/bench.py.
//
// wrk keeps one SSL object per connection slot. On a reconnect (every
// request under "Connection: close") it calls SSL_shutdown then SSL_clear
// (src/ssl.c, ssl_close) and reuses the object; SSL_clear keeps the
// session of an object that sent close_notify, so the next SSL_connect
// offers it (a TLS 1.2 session id or ticket, a TLS 1.3 PSK) and the
// server may resume instead of doing a full handshake.
//
//   WRK_TLS_FRESH=1      after wrk's SSL_clear, drop the kept session
//                        (SSL_set_session(ssl, NULL)): every connection
//                        is a full handshake, certificate and signature
//                        included, as a new client's would be.
//   WRK_TLS_STATS=FILE   at exit, write "full N\nresumed M\n": the
//                        handshakes wrk completed, by SSL_session_reused.
//
// Built by loadtest/run.sh:
//   cc -O2 -shared -fPIC -o wrk_tls.so wrk_tls.c -lssl -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <openssl/ssl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static atomic_ulong full_handshakes, resumed_handshakes;

static int fresh(void) {
  static int cached = -1;
  if (cached < 0) {
    const char* v = getenv("WRK_TLS_FRESH");
    cached = v != NULL && v[0] == '1';
  }
  return cached;
}

int SSL_clear(SSL* s) {
  static int (*real)(SSL*);
  if (real == NULL) real = (int (*)(SSL*))dlsym(RTLD_NEXT, "SSL_clear");
  int r = real(s);
  if (fresh()) SSL_set_session(s, NULL);
  return r;
}

int SSL_connect(SSL* s) {
  static int (*real)(SSL*);
  if (real == NULL) real = (int (*)(SSL*))dlsym(RTLD_NEXT, "SSL_connect");
  int r = real(s);
  if (r == 1) {
    if (SSL_session_reused(s)) {
      atomic_fetch_add(&resumed_handshakes, 1);
    } else {
      atomic_fetch_add(&full_handshakes, 1);
    }
  }
  return r;
}

__attribute__((destructor)) static void write_stats(void) {
  const char* path = getenv("WRK_TLS_STATS");
  if (path == NULL || path[0] == '\0') return;
  FILE* f = fopen(path, "w");
  if (f == NULL) return;
  fprintf(f, "full %lu\nresumed %lu\n", atomic_load(&full_handshakes),
          atomic_load(&resumed_handshakes));
  fclose(f);
}
