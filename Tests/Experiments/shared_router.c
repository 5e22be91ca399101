// An experiment for issue 35 (geo on every core), kept with its figures in
// Docs/BENCHMARKS.md: can one ROUTER socket shared by N threads under a lock, each
// waiting on the socket's ZMQ_FD when idle and waking another when input is left,
// answer more requests per second than the one front thread ServiceKit's Server
// runs today, with W µs of work per request and 4 closed-loop REQ clients on the
// same cores? (The shape DealerLink uses on the client side since 8f4b430.)
//
//   gcc -O2 -o /tmp/shared_router Tests/Experiments/shared_router.c -lzmq -lpthread
//   /tmp/shared_router single 40 5   # today's shape: one thread polls and answers
//   /tmp/shared_router 2 40 5        # two threads share the socket
//
// Not built by SwiftPM or make: it is C, and measures libzmq and the machine, not Hereabouts.
#include <zmq.h>
#include <pthread.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <stdatomic.h>

static void *ctx; static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *router; static int zfd; static int wake[2];
static int work_us = 40; static size_t reply_bytes = 6000;
static atomic_int stop_flag; static atomic_long answered;

static double now_us(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec / 1e3; }
static void busy(int us) { double end = now_us() + us; volatile double x = 0; while (now_us() < end) x += 1; }
static int has_input(void) { int ev = 0; size_t sz = sizeof ev; zmq_getsockopt(router, ZMQ_EVENTS, &ev, &sz); return ev & ZMQ_POLLIN; }

// receive one request (id, delim, body) without waiting; returns 0 when none
static int take(zmq_msg_t parts[3]) {
  for (int i = 0; i < 3; i++) { zmq_msg_init(&parts[i]); if (zmq_msg_recv(&parts[i], router, i == 0 ? ZMQ_DONTWAIT : 0) < 0) { zmq_msg_close(&parts[i]); return 0; } }
  return 1;
}

static void *shared_worker(void *arg) {
  char *reply = malloc(reply_bytes); memset(reply, 'x', reply_bytes);
  while (!atomic_load(&stop_flag)) {
    zmq_msg_t p[3];
    pthread_mutex_lock(&lock);
    int got = take(p);
    int more = got && has_input();
    pthread_mutex_unlock(&lock);
    if (more) { char b = 1; write(wake[1], &b, 1); }
    if (!got) {
      struct pollfd fds[2] = {{zfd, POLLIN, 0}, {wake[0], POLLIN, 0}};
      poll(fds, 2, 100);
      if (fds[1].revents & POLLIN) { char b[64]; read(wake[0], b, sizeof b); }
      continue;
    }
    busy(work_us);
    pthread_mutex_lock(&lock);
    zmq_msg_send(&p[0], router, ZMQ_SNDMORE); zmq_msg_send(&p[1], router, ZMQ_SNDMORE);
    zmq_send(router, reply, reply_bytes, 0);
    zmq_msg_close(&p[2]);
    int again = has_input();
    pthread_mutex_unlock(&lock);
    if (again) { char b = 1; write(wake[1], &b, 1); }
    atomic_fetch_add(&answered, 1);
  }
  return NULL;
}

static void *single_worker(void *arg) {
  char *reply = malloc(reply_bytes); memset(reply, 'x', reply_bytes);
  zmq_pollitem_t items[1] = {{router, 0, ZMQ_POLLIN, 0}};
  while (!atomic_load(&stop_flag)) {
    zmq_poll(items, 1, 100);
    zmq_msg_t p[3];
    while (take(p)) {
      busy(work_us);
      zmq_msg_send(&p[0], router, ZMQ_SNDMORE); zmq_msg_send(&p[1], router, ZMQ_SNDMORE);
      zmq_send(router, reply, reply_bytes, 0); zmq_msg_close(&p[2]);
      atomic_fetch_add(&answered, 1);
    }
  }
  return NULL;
}

static void *client(void *arg) {
  void *req = zmq_socket(ctx, ZMQ_REQ); zmq_connect(req, "tcp://127.0.0.1:17999");
  char buf[8192];
  while (!atomic_load(&stop_flag)) { zmq_send(req, "q", 1, 0); zmq_recv(req, buf, sizeof buf, 0); }
  zmq_close(req); return NULL;
}

int main(int argc, char **argv) {
  int single = argc > 1 && strcmp(argv[1], "single") == 0;
  int threads = single ? 1 : (argc > 1 ? atoi(argv[1]) : 1); work_us = argc > 2 ? atoi(argv[2]) : 40; int seconds = argc > 3 ? atoi(argv[3]) : 6;
  ctx = zmq_ctx_new(); router = zmq_socket(ctx, ZMQ_ROUTER); zmq_bind(router, "tcp://127.0.0.1:17999");
  size_t sz = sizeof zfd; zmq_getsockopt(router, ZMQ_FD, &zfd, &sz); pipe(wake);
  pthread_t w[16], c[4];
  for (int i = 0; i < threads; i++) pthread_create(&w[i], NULL, single ? single_worker : shared_worker, NULL);
  for (int i = 0; i < 4; i++) pthread_create(&c[i], NULL, client, NULL);
  sleep(1); atomic_store(&answered, 0); double t0 = now_us();
  sleep(seconds);
  long n = atomic_load(&answered); double t1 = now_us();
  printf("%s threads=%d work=%dus: %.0f req/s\n", single ? "single" : "shared", threads, work_us, n / ((t1 - t0) / 1e6));
  fflush(stdout); _exit(0);
}
