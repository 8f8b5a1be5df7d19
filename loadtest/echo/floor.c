#define _GNU_SOURCE
/* The floor for goro-echo: a minimal single-threaded epoll echo server in C.
 * Level-triggered, one read and one write per readiness event, no framework:
 * the cheapest way the kernel lets a process echo, so goro's CPU per echoed
 * message is quoted as a ratio to this. Prints its bound address first. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char** argv) {
  int port = argc > 1 ? atoi(argv[1]) : 0;
  int ln = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  int one = 1;
  setsockopt(ln, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(ln, (struct sockaddr*)&a, sizeof a) || listen(ln, 4096)) return perror("bind"), 1;
  socklen_t len = sizeof a;
  getsockname(ln, (struct sockaddr*)&a, &len);
  printf("127.0.0.1:%d\n", ntohs(a.sin_port));
  fflush(stdout);
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = ln};
  epoll_ctl(ep, EPOLL_CTL_ADD, ln, &ev);
  struct epoll_event evs[128];
  static char buf[16384];
  for (;;) {
    int n = epoll_wait(ep, evs, 128, -1);
    for (int i = 0; i < n; i++) {
      int fd = evs[i].data.fd;
      if (fd == ln) {
        int c;
        while ((c = accept4(ln, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
          setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          struct epoll_event cev = {.events = EPOLLIN, .data.fd = c};
          epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev);
        }
        continue;
      }
      ssize_t r = read(fd, buf, sizeof buf);
      if (r <= 0) {
        close(fd);
        continue;
      }
      if (write(fd, buf, (size_t)r) != r) close(fd); /* 64-byte messages always fit */
    }
  }
}
