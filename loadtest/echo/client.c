/* Echo load client: N connections, each sends a 64-byte message and waits for
 * the echo before sending the next (closed loop), for D seconds. One thread,
 * epoll. Prints: round_trips throughput_per_s mean_rtt_us p50_us p99_us.
 *   goro-echo-client HOST:PORT CONNS SECONDS */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MSG 64

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp(const void* a, const void* b) {
  float x = *(const float*)a, y = *(const float*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  if (argc < 4) return fprintf(stderr, "usage: %s HOST:PORT CONNS SECONDS\n", argv[0]), 2;
  char host[64];
  snprintf(host, sizeof host, "%s", argv[1]);
  char* colon = strrchr(host, ':');
  if (colon == NULL) return fprintf(stderr, "bad address %s\n", host), 2;
  *colon = 0;
  int port = atoi(colon + 1), conns = atoi(argv[2]);
  double secs = atof(argv[3]);
  int ep = epoll_create1(0);
  int* got = calloc((size_t)conns, sizeof(int));
  double* sent_at = calloc((size_t)conns, sizeof(double));
  size_t cap = 1 << 24, nsamples = 0;
  float* samples = malloc(cap * sizeof(float));
  char msg[MSG], buf[4096];
  memset(msg, 'e', sizeof msg);
  for (int i = 0; i < conns; i++) {
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, host, &a.sin_addr);
    if (connect(fd, (struct sockaddr*)&a, sizeof a)) return perror("connect"), 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (unsigned)i};
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    got[i] = fd; /* reuse as fd table until the loop starts */
  }
  int* fds = got;
  got = calloc((size_t)conns, sizeof(int));
  double start = now(), end = start + secs;
  for (int i = 0; i < conns; i++) {
    sent_at[i] = now();
    if (write(fds[i], msg, MSG) != MSG) return perror("write"), 1;
  }
  long trips = 0;
  struct epoll_event evs[256];
  double t;
  while ((t = now()) < end) {
    int n = epoll_wait(ep, evs, 256, 100);
    for (int k = 0; k < n; k++) {
      int i = (int)evs[k].data.u32;
      ssize_t r = read(fds[i], buf, sizeof buf);
      if (r <= 0) return fprintf(stderr, "connection %d closed\n", i), 1;
      got[i] += (int)r;
      if (got[i] < MSG) continue;
      got[i] -= MSG;
      double t1 = now();
      if (nsamples < cap) samples[nsamples++] = (float)((t1 - sent_at[i]) * 1e6);
      trips++;
      sent_at[i] = t1;
      if (write(fds[i], msg, MSG) != MSG) return perror("write"), 1;
    }
  }
  double elapsed = now() - start;
  qsort(samples, nsamples, sizeof(float), cmp);
  double sum = 0;
  for (size_t i = 0; i < nsamples; i++)
    sum += samples[i];
  printf("%ld %.0f %.2f %.2f %.2f\n", trips, (double)trips / elapsed,
         nsamples ? sum / (double)nsamples : 0, nsamples ? samples[nsamples / 2] : 0,
         nsamples ? samples[nsamples * 99 / 100] : 0);
  return 0;
}
