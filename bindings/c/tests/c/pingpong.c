/* Round-trip latency through the C API (loopback): `pingpong pong DOMAIN` echoes every
 * TestData_t sample from topic "c_ping" back on "c_pong"; `pingpong ping DOMAIN N SIZE`
 * sends N samples of SIZE payload bytes one at a time (reliable, KEEP_ALL on both
 * sides), waits for each echo, and prints the round-trip percentiles in microseconds.
 * The pong exits when it receives a sample whose seq_num is 0xffffffff. Loopback, with
 * the FERRODDS_* environment variables applied on top (e.g. FERRODDS_CONGESTION_CONTROL=0);
 * PINGPONG_SHM=1 adds shared memory. Built and run briefly by tests/c_program.rs; run it
 * longer by hand for figures. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ferrodds.h"

#define SEC 1000000000LL

#define OK(call)                                                                           \
  do {                                                                                     \
    FerroddsRetcode rc_ = (call);                                                          \
    if (rc_ != FERRODDS_RETCODE_OK) {                                                      \
      fprintf(stderr, "pingpong.c:%d: %s: %s\n", __LINE__, ferrodds_retcode_name(rc_),   \
              ferrodds_last_error_message());                                              \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * SEC + ts.tv_nsec;
}

/* The pong echoes from the reader's listener, on the participant's receive thread (as
 * perftest's subscriber does): no hand-off to another thread. */
struct pong {
  FerroddsWriter w;
  FerroddsGuardCondition done;
};

static void echo(const uint8_t *data, size_t len, const FerroddsSampleInfo *info, void *user) {
  struct pong *pg = user;
  if (!info->valid_data) return;
  OK(ferrodds_write(pg->w, data, len));
  if (memcmp(data + 4 + 8, "\xff\xff\xff\xff", 4) == 0) OK(ferrodds_guard_condition_set(pg->done, 1));
}

static void on_ping(FerroddsReader r, void *user) {
  FerroddsRetcode rc = ferrodds_take_each(r, 0, echo, user, NULL);
  if (rc != FERRODDS_RETCODE_NO_DATA) OK(rc);
}

static int cmp(const void *a, const void *b) {
  long long x = *(const long long *)a, y = *(const long long *)b;
  return (x > y) - (x < y);
}

/* XCDR1 little-endian TestData_t with `size` payload bytes and sequence number `seq`. */
static size_t sample(uint8_t *buf, uint32_t seq, uint32_t size) {
  size_t off = 4 + 28 + size, pad = (4 - off % 4) % 4;
  memset(buf, 0, off + pad);
  buf[1] = 0x01;
  buf[3] = (uint8_t)pad;
  memcpy(buf + 4 + 8, &seq, 4); /* seq_num (a little-endian host) */
  memcpy(buf + 4 + 24, &size, 4);
  return off + pad;
}

int main(int argc, char **argv) {
  if (argc < 3 || (strcmp(argv[1], "ping") && strcmp(argv[1], "pong"))) {
    fprintf(stderr, "usage: pingpong pong DOMAIN | pingpong ping DOMAIN N SIZE\n");
    return 2;
  }
  int ping = strcmp(argv[1], "ping") == 0;
  uint32_t domain = (uint32_t)atoi(argv[2]);
  long n = ping && argc > 3 ? atol(argv[3]) : 0;
  uint32_t size = ping && argc > 4 ? (uint32_t)atol(argv[4]) : 32;
  if (size > 65000) size = 65000;

  FerroddsParticipantConfig cfg;
  FerroddsParticipant p;
  FerroddsTopic tin, tout;
  FerroddsQos wq, rq;
  FerroddsWriter w;
  FerroddsReader r;
  OK(ferrodds_participant_config_loopback(&cfg));
  cfg.env_overrides = 1; /* FERRODDS_* variables set by hand win over loopback */
  if (getenv("PINGPONG_SHM")) cfg.shared_memory = 1;
  OK(ferrodds_participant_create(domain, &cfg, &p));
  OK(ferrodds_topic_create(p, ping ? "c_pong" : "c_ping", FERRODDS_TYPE_TEST_DATA, &tin));
  OK(ferrodds_topic_create(p, ping ? "c_ping" : "c_pong", FERRODDS_TYPE_TEST_DATA, &tout));
  OK(ferrodds_qos_writer_default(&wq));
  OK(ferrodds_qos_reader_default(&rq));
  rq.reliability = FERRODDS_RELIABILITY_RELIABLE;
  /* KEEP_ALL as perftest's latency test (with KEEP_LAST 1, 60000 B round trips took
   * milliseconds under congestion control; see the report of issue 17). */
  wq.history_kind = rq.history_kind = FERRODDS_HISTORY_KEEP_ALL;
  OK(ferrodds_writer_create(p, tout, &wq, NULL, &w));
  static struct pong pg;
  FerroddsReaderListener l = {0};
  FerroddsWaitSet ws = 0;
  if (!ping) {
    pg.w = w;
    OK(ferrodds_guard_condition_create(&pg.done));
    OK(ferrodds_waitset_create(&ws));
    OK(ferrodds_waitset_attach_guard(ws, pg.done, 1));
    l.on_data_available = on_ping;
    l.user = &pg;
  }
  OK(ferrodds_reader_create(p, tin, &rq, ping ? NULL : &l, &r));
  OK(ferrodds_writer_wait_for_matched(w, 1, 30 * SEC));
  OK(ferrodds_reader_wait_for_matched(r, 1, 30 * SEC));

  static uint8_t buf[65536 + 64];
  size_t len;
  FerroddsSampleInfo info;
  if (!ping) {
    FerroddsRetcode rc = ferrodds_waitset_wait(ws, 120 * SEC, NULL, 0, NULL);
    if (rc != FERRODDS_RETCODE_TIMEOUT) OK(rc);
    OK(ferrodds_waitset_delete(ws));
    OK(ferrodds_guard_condition_delete(pg.done));
  } else {
    long long *rtt = malloc(sizeof(long long) * (size_t)(n > 0 ? n : 1));
    if (!rtt) return 1;
    static uint8_t out_buf[65536 + 64];
    for (long i = 0; i < n; i++) {
      size_t out = sample(out_buf, (uint32_t)i, size);
      long long t0 = now_ns();
      OK(ferrodds_write(w, out_buf, out));
      int resent = 0;
      for (;;) {
        /* Matched on this side does not mean matched on the other: a pong written before
         * the pong's writer discovered our reader is not delivered (volatile). No answer
         * within a second: the same ping again (a late pong of it is skipped below). */
        FerroddsRetcode wrc = ferrodds_reader_wait_for_data(r, SEC);
        if (wrc == FERRODDS_RETCODE_TIMEOUT && resent < 10) {
          resent++;
          OK(ferrodds_write(w, out_buf, out));
          continue;
        }
        OK(wrc);
        FerroddsRetcode rc = ferrodds_take(r, buf, sizeof buf, &len, &info);
        if (rc == FERRODDS_RETCODE_NO_DATA) continue;
        OK(rc);
        uint32_t seq;
        memcpy(&seq, buf + 4 + 8, 4);
        if (info.valid_data && seq == (uint32_t)i) break;
      }
      rtt[i] = now_ns() - t0;
    }
    size_t out = sample(buf, 0xffffffffu, 0);
    OK(ferrodds_write(w, buf, out));
    OK(ferrodds_writer_wait_for_acknowledgments(w, 5 * SEC));
    qsort(rtt, (size_t)n, sizeof *rtt, cmp);
    if (n > 0)
      printf("pingpong: %ld round trips of %u B: p50 %.1f us, p90 %.1f us, p99 %.1f us, max %.1f us\n",
             n, size, rtt[n / 2] / 1e3, rtt[n * 9 / 10] / 1e3, rtt[n * 99 / 100] / 1e3,
             rtt[n - 1] / 1e3);
    free(rtt);
  }
  OK(ferrodds_participant_delete(p));
  return 0;
}
