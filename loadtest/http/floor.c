#define _GNU_SOURCE
/* The floor for goro-hello (loadtest/http/bench.py): a single-threaded epoll
 * loop that answers canned bytes without parsing. It counts requests by the
 * "\r\n\r\n" that ends each head (carried across reads) and answers all the
 * complete ones in a read with one write, so a pipelined batch costs one
 * read and one write. No routing, no headers read, no Date formatting: the
 * cheapest way the kernel lets a process answer HTTP keep-alive requests,
 * so every server's CPU per request is quoted as a ratio to this.
 *
 *   floor [plain|json] [keep|close]
 *
 * Prints its bound address (127.0.0.1, a kernel-chosen port) first. `close`
 * closes each connection after its answer (the Connection: close scenario). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_FDS 65536
#define MAX_BATCH 256

static const char kPlain[] =
    "HTTP/1.1 200 OK\r\nServer: floor\r\nDate: Wed, 25 Nov 2026 00:00:00 GMT\r\n"
    "Content-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, World!";
static const char kJson[] =
    "HTTP/1.1 200 OK\r\nServer: floor\r\nDate: Wed, 25 Nov 2026 00:00:00 GMT\r\n"
    "Content-Type: application/json\r\nContent-Length: 27\r\n\r\n{\"message\":\"Hello, World!\"}";
static const char kPlainClose[] =
    "HTTP/1.1 200 OK\r\nServer: floor\r\nDate: Wed, 25 Nov 2026 00:00:00 GMT\r\n"
    "Content-Type: text/plain\r\nContent-Length: 13\r\nConnection: close\r\n\r\nHello, World!";

/* SIGINT or SIGTERM: leave the loop and exit normally, so that a tool the
 * floor runs under (valgrind --tool=callgrind, for bench.py's instruction
 * counts) writes its results; dying of the signal left callgrind's file
 * empty (bench.py's shell may also start it with SIGINT ignored). */
static volatile sig_atomic_t stop;
static void on_stop(int sig) {
  (void)sig;
  stop = 1;
}

/* Per connection: how many bytes of "\r\n\r\n" the previous read ended in. */
static unsigned char matched[MAX_FDS];

int main(int argc, char** argv) {
  const int json = argc > 1 && strcmp(argv[1], "json") == 0;
  const int close_after = argc > 2 && strcmp(argv[2], "close") == 0;
  const char* resp = close_after ? kPlainClose : json ? kJson : kPlain;
  const size_t resp_len = strlen(resp);
  static char out[MAX_BATCH * sizeof kPlainClose];
  for (int i = 0; i < MAX_BATCH; i++)
    memcpy(out + (size_t)i * resp_len, resp, resp_len);

  int ln = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  int one = 1;
  setsockopt(ln, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(ln, (struct sockaddr*)&a, sizeof a) || listen(ln, 4096)) return perror("bind"), 1;
  socklen_t len = sizeof a;
  getsockname(ln, (struct sockaddr*)&a, &len);
  printf("127.0.0.1:%d\n", ntohs(a.sin_port));
  fflush(stdout);

  /* Blocked except inside epoll_pwait, so a signal can never land between
   * the check of `stop` and the wait (under valgrind it did, and the wait
   * never ended). No SA_RESTART: epoll_pwait returns EINTR. */
  struct sigaction sa = {.sa_handler = on_stop};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigset_t stops, during_wait;
  sigemptyset(&stops);
  sigaddset(&stops, SIGINT);
  sigaddset(&stops, SIGTERM);
  sigprocmask(SIG_BLOCK, &stops, &during_wait);
  sigdelset(&during_wait, SIGINT);
  sigdelset(&during_wait, SIGTERM);

  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = ln};
  epoll_ctl(ep, EPOLL_CTL_ADD, ln, &ev);
  struct epoll_event evs[256];
  static char buf[65536];
  static const char kEnd[] = "\r\n\r\n";
  while (!stop) {
    int n = epoll_pwait(ep, evs, 256, -1, &during_wait);
    for (int i = 0; i < n; i++) {
      int fd = evs[i].data.fd;
      if (fd == ln) {
        int c;
        while ((c = accept4(ln, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
          if (c >= MAX_FDS) {
            close(c);
            continue;
          }
          setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          matched[c] = 0;
          struct epoll_event cev = {.events = EPOLLIN, .data.fd = c};
          epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev);
        }
        continue;
      }
      ssize_t r = read(fd, buf, sizeof buf);
      if (r <= 0) {
        if (r < 0 && errno == EAGAIN) continue;
        close(fd);
        continue;
      }
      int requests = 0;
      unsigned m = matched[fd];
      for (ssize_t k = 0; k < r; k++) {
        m = buf[k] == kEnd[m] ? m + 1 : (buf[k] == '\r' ? 1 : 0);
        if (m == 4) {
          requests++;
          m = 0;
        }
      }
      matched[fd] = (unsigned char)m;
      const int answered = requests > 0;
      int ok = 1;
      while (ok && requests > 0) {
        int batch = requests < MAX_BATCH ? requests : MAX_BATCH;
        size_t want = (size_t)batch * resp_len;
        /* Loopback sockets take a batch this small whole; a short write
         * (a client that stopped reading) drops the connection. */
        ok = write(fd, out, want) == (ssize_t)want;
        requests -= batch;
      }
      if (!ok || (close_after && answered)) close(fd);
    }
  }
  return 0;
}
