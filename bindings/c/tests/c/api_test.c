/* The C API exercised from C (built and run by tests/c_program.rs, loopback only,
 * domain 135): two participants exchange ShapeType samples reliably, a dispose is seen,
 * a listener fires, a wait set wakes, bad input gives error codes, a deleted handle gives
 * FERRODDS_RETCODE_ALREADY_DELETED, and a perftest sample round-trips. Exit status 0 and
 * "api_test: ok" on success; the first failed check prints its line and exits 1. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ferrodds.h"

#define DOMAIN 135
#define N 200
#define SEC 1000000000LL

static int checks;

#define CHECK(cond)                                                                        \
  do {                                                                                     \
    checks++;                                                                              \
    if (!(cond)) {                                                                         \
      fprintf(stderr, "api_test.c:%d: check failed: %s (last error: %s)\n", __LINE__,    \
              #cond, ferrodds_last_error_message());                                       \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

#define OK(call) CHECK((call) == FERRODDS_RETCODE_OK)

static void put_u32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_u32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* XCDR1 little-endian ShapeType: header, string color, x, y, shapesize. */
static size_t shape(uint8_t *buf, const char *color, int32_t x, int32_t y, int32_t size) {
  size_t n = strlen(color) + 1, off = 4;
  buf[0] = 0x00; buf[1] = 0x01; buf[2] = 0x00; buf[3] = 0x00;
  put_u32(buf + off, (uint32_t)n);
  off += 4;
  memcpy(buf + off, color, n);
  off += n;
  while ((off - 4) % 4) buf[off++] = 0;
  put_u32(buf + off, (uint32_t)x);
  put_u32(buf + off + 4, (uint32_t)y);
  put_u32(buf + off + 8, (uint32_t)size);
  return off + 12;
}

/* x of a received ShapeType (little-endian sender). */
static int32_t shape_x(const uint8_t *buf) {
  uint32_t n = get_u32(buf + 4);
  size_t off = 8 + n;
  while ((off - 4) % 4) off++;
  return (int32_t)get_u32(buf + off);
}

/* XCDR1 little-endian perftest sample with `len` payload bytes. */
static size_t perftest(uint8_t *buf, uint32_t key, uint32_t seq, uint32_t len) {
  size_t off = 4, pad;
  buf[0] = 0x00; buf[1] = 0x01; buf[2] = 0x00; buf[3] = 0x00;
  put_u32(buf + off, key);          /* octet key[4] */
  put_u32(buf + off + 4, 7);        /* entity_id */
  put_u32(buf + off + 8, seq);      /* seq_num */
  put_u32(buf + off + 12, 0);       /* timestamp_sec */
  put_u32(buf + off + 16, 0);       /* timestamp_usec */
  put_u32(buf + off + 20, (uint32_t)-1); /* latency_ping */
  put_u32(buf + off + 24, len);     /* bin_data length */
  off += 28;
  for (uint32_t i = 0; i < len; i++) buf[off + i] = (uint8_t)i;
  off += len;
  pad = (4 - off % 4) % 4;
  memset(buf + off, 0, pad);
  buf[3] = (uint8_t)pad;
  return off + pad;
}

static atomic_int data_available;
static atomic_int matched_now;

static void on_data(FerroddsReader r, void *user) {
  (void)r;
  atomic_fetch_add((atomic_int *)user, 1);
}

static void on_matched(FerroddsReader r, const FerroddsSubscriptionMatchedStatus *s, void *user) {
  (void)r;
  (void)user;
  atomic_store(&matched_now, (int)s->current_count);
}

struct perf_seen {
  int count;
  uint32_t seq;
  size_t len;
  int payload_ok;
};

static void on_perf(const uint8_t *data, size_t len, const FerroddsSampleInfo *info, void *user) {
  struct perf_seen *seen = user;
  if (!info->valid_data) return;
  seen->count++;
  seen->len = len;
  seen->seq = get_u32(data + 4 + 8);
  seen->payload_ok = get_u32(data + 4 + 24) == 1000 && data[4 + 28 + 999] == (uint8_t)999;
}

struct reenter {
  FerroddsReader r;
  int32_t x;
  FerroddsRetcode inner;
};

/* A take_each callback taking from the same reader (no lock is held around callbacks). */
static void reenter(const uint8_t *data, size_t len, const FerroddsSampleInfo *info, void *user) {
  struct reenter *re = user;
  uint8_t buf[64];
  size_t n;
  FerroddsSampleInfo i2;
  (void)len;
  (void)info;
  re->x = shape_x(data);
  re->inner = ferrodds_take(re->r, buf, sizeof buf, &n, &i2);
}

int main(void) {
  FerroddsParticipantConfig cfg;
  FerroddsParticipant pub_p, sub_p;
  FerroddsTopic pub_t, sub_t;
  FerroddsWriter w;
  FerroddsReader r;
  FerroddsQos wq, rq;
  FerroddsWaitSet ws;
  uint8_t buf[512], big[70000];
  size_t len, count;
  FerroddsSampleInfo info;

  OK(ferrodds_participant_config_loopback(&cfg));
  OK(ferrodds_participant_create(DOMAIN, &cfg, &pub_p));
  OK(ferrodds_participant_create(DOMAIN, &cfg, &sub_p));
  OK(ferrodds_topic_create(pub_p, "capi_shapes", FERRODDS_TYPE_SHAPE, &pub_t));
  OK(ferrodds_topic_create(sub_p, "capi_shapes", FERRODDS_TYPE_SHAPE, &sub_t));
  /* The same name with another type in one participant is refused. */
  {
    FerroddsTopic other;
    CHECK(ferrodds_topic_create(pub_p, "capi_shapes", FERRODDS_TYPE_TEST_DATA, &other) ==
          FERRODDS_RETCODE_PRECONDITION_NOT_MET);
    CHECK(ferrodds_topic_create(pub_p, "x", 99, &other) == FERRODDS_RETCODE_BAD_PARAMETER);
    CHECK(strstr(ferrodds_last_error_message(), "99") != NULL);
  }

  OK(ferrodds_qos_writer_default(&wq));
  wq.history_kind = FERRODDS_HISTORY_KEEP_ALL;
  wq.max_blocking_time_ns = 5 * SEC;
  OK(ferrodds_qos_reader_default(&rq));
  rq.reliability = FERRODDS_RELIABILITY_RELIABLE;
  rq.history_kind = FERRODDS_HISTORY_KEEP_ALL;
  OK(ferrodds_writer_create(pub_p, pub_t, &wq, NULL, &w));
  /* A topic of another participant is refused. */
  {
    FerroddsWriter bad;
    CHECK(ferrodds_writer_create(pub_p, sub_t, &wq, NULL, &bad) == FERRODDS_RETCODE_BAD_PARAMETER);
    rq.history_depth = 0;
    rq.history_kind = FERRODDS_HISTORY_KEEP_LAST;
    CHECK(ferrodds_reader_create(sub_p, sub_t, &rq, NULL, &bad) == FERRODDS_RETCODE_BAD_PARAMETER);
    CHECK(strstr(ferrodds_last_error_message(), "history_depth") != NULL);
    rq.history_kind = FERRODDS_HISTORY_KEEP_ALL;
  }
  FerroddsReaderListener listener = {0};
  listener.on_data_available = on_data;
  listener.on_subscription_matched = on_matched;
  listener.user = &data_available;
  OK(ferrodds_reader_create(sub_p, sub_t, &rq, &listener, &r));

  OK(ferrodds_writer_wait_for_matched(w, 1, 10 * SEC));
  OK(ferrodds_reader_wait_for_matched(r, 1, 10 * SEC));
  {
    FerroddsPublicationMatchedStatus pm;
    OK(ferrodds_writer_get_publication_matched_status(w, &pm));
    CHECK(pm.current_count == 1 && pm.total_count == 1);
  }

  /* Wait set: the reader's data and a guard condition. */
  FerroddsGuardCondition gc;
  OK(ferrodds_waitset_create(&ws));
  OK(ferrodds_guard_condition_create(&gc));
  OK(ferrodds_waitset_attach_reader(ws, r, 11));
  OK(ferrodds_waitset_attach_guard(ws, gc, 22));
  CHECK(ferrodds_waitset_wait(ws, 10 * 1000000LL, NULL, 0, NULL) == FERRODDS_RETCODE_TIMEOUT);
  OK(ferrodds_guard_condition_set(gc, 1));
  {
    uintptr_t tokens[4];
    OK(ferrodds_waitset_wait(ws, SEC, tokens, 4, &count));
    CHECK(count == 1 && tokens[0] == 22);
  }
  OK(ferrodds_guard_condition_set(gc, 0));

  /* Reliable exchange: N samples on two instances, in order. */
  for (int i = 0; i < N; i++) {
    len = shape(buf, i % 2 ? "RED" : "BLUE", i, 2 * i, 30);
    OK(ferrodds_write(w, buf, len));
  }
  OK(ferrodds_writer_wait_for_acknowledgments(w, 10 * SEC));
  int got = 0, in_order = 1;
  FerroddsInstanceHandle blue_seen = {{0}};
  while (got < N) {
    uintptr_t token;
    OK(ferrodds_waitset_wait(ws, 5 * SEC, &token, 1, &count));
    CHECK(count >= 1 && token == 11);
    for (;;) {
      FerroddsRetcode rc = ferrodds_take(r, buf, sizeof buf, &len, &info);
      if (rc == FERRODDS_RETCODE_NO_DATA) break;
      OK(rc);
      CHECK(info.valid_data == 1 && info.instance_state == FERRODDS_INSTANCE_STATE_ALIVE);
      CHECK(info.has_source_timestamp == 1 && info.source_timestamp_ns > 0);
      CHECK(buf[0] == 0x00 && buf[1] == 0x01);
      if (shape_x(buf) != got) in_order = 0;
      if (got == 0) blue_seen = info.instance_handle;
      got++;
    }
  }
  CHECK(got == N && in_order);
  CHECK(atomic_load(&data_available) > 0);
  CHECK(atomic_load(&matched_now) == 1);

  /* Instances: the writer's handle of BLUE is the reader's instance handle. */
  {
    FerroddsInstanceHandle h, none;
    len = shape(buf, "BLUE", 0, 0, 0);
    OK(ferrodds_lookup_instance(w, buf, len, &h));
    CHECK(memcmp(&h, &blue_seen, sizeof h) == 0);
    OK(ferrodds_register_instance(w, buf, len, &h));
    CHECK(memcmp(&h, &blue_seen, sizeof h) == 0);
    len = shape(buf, "GREEN", 0, 0, 0);
    OK(ferrodds_lookup_instance(w, buf, len, &none));
    FerroddsInstanceHandle nil = {{0}};
    CHECK(memcmp(&none, &nil, sizeof none) == 0);
    CHECK(ferrodds_unregister_instance(w, buf, len) == FERRODDS_RETCODE_PRECONDITION_NOT_MET);
  }

  /* Dispose RED: the reader sees a sample without data, instance disposed. */
  len = shape(buf, "RED", 0, 0, 0);
  OK(ferrodds_dispose(w, buf, len));
  OK(ferrodds_reader_wait_for_data(r, 5 * SEC));
  OK(ferrodds_take(r, buf, sizeof buf, &len, &info));
  CHECK(info.valid_data == 0 && len == 0);
  CHECK(info.instance_state == FERRODDS_INSTANCE_STATE_NOT_ALIVE_DISPOSED);
  CHECK(memcmp(&info.instance_handle, &blue_seen, sizeof blue_seen) != 0);

  /* A buffer too small keeps the sample for the next take. */
  len = shape(buf, "YELLOW", 1234, 0, 0);
  OK(ferrodds_write(w, buf, len));
  OK(ferrodds_reader_wait_for_data(r, 5 * SEC));
  {
    uint8_t small[8];
    size_t need = 0;
    CHECK(ferrodds_take(r, small, sizeof small, &need, &info) == FERRODDS_RETCODE_BUFFER_TOO_SMALL);
    CHECK(need == len);
    OK(ferrodds_take(r, buf, sizeof buf, &len, &info));
    CHECK(len == need && shape_x(buf) == 1234);
    CHECK(ferrodds_take(r, buf, sizeof buf, &len, &info) == FERRODDS_RETCODE_NO_DATA);
    /* The kept sample goes first to take_each, whose callback may take again. */
    len = shape(buf, "YELLOW", 4321, 0, 0);
    OK(ferrodds_write(w, buf, len));
    OK(ferrodds_reader_wait_for_data(r, 5 * SEC));
    CHECK(ferrodds_take(r, small, sizeof small, &need, &info) == FERRODDS_RETCODE_BUFFER_TOO_SMALL);
    struct reenter re = {r, 0, -1};
    OK(ferrodds_take_each(r, 1, reenter, &re, &count));
    CHECK(count == 1 && re.x == 4321 && re.inner == FERRODDS_RETCODE_NO_DATA);
  }

  /* Bad input: error codes and messages, the participant keeps working. */
  {
    char long_color[200];
    memset(long_color, 'A', sizeof long_color - 1);
    long_color[sizeof long_color - 1] = 0;
    len = shape(big, long_color, 0, 0, 0);
    CHECK(ferrodds_write(w, big, len) == FERRODDS_RETCODE_SERIALIZATION);
    CHECK(strstr(ferrodds_last_error_message(), "bound 128") != NULL);
    len = shape(buf, "BLUE", 1, 2, 3);
    CHECK(ferrodds_write(w, buf, len - 1) == FERRODDS_RETCODE_SERIALIZATION);
    buf[1] = 0x00; /* big-endian header */
    CHECK(ferrodds_write(w, buf, len) == FERRODDS_RETCODE_SERIALIZATION);
    CHECK(ferrodds_write(w, NULL, 12) == FERRODDS_RETCODE_BAD_PARAMETER);
    CHECK(strstr(ferrodds_last_error_message(), "data is NULL") != NULL);
    CHECK(ferrodds_write(r, buf, len) == FERRODDS_RETCODE_BAD_PARAMETER); /* a reader */
    CHECK(ferrodds_take(r, NULL, 16, &len, &info) == FERRODDS_RETCODE_BAD_PARAMETER);
    CHECK(ferrodds_write(0, buf, len) == FERRODDS_RETCODE_ALREADY_DELETED);
    CHECK(strcmp(ferrodds_retcode_name(FERRODDS_RETCODE_TIMEOUT), "FERRODDS_RETCODE_TIMEOUT") == 0);
    len = shape(buf, "BLUE", 77, 2, 3);
    OK(ferrodds_write(w, buf, len));
    OK(ferrodds_reader_wait_for_data(r, 5 * SEC));
    OK(ferrodds_take(r, buf, sizeof buf, &len, &info));
    CHECK(shape_x(buf) == 77);
  }

  /* The perftest type with zero-copy take_each; a bin_data above its bound is refused. */
  {
    FerroddsTopic pt_pub, pt_sub;
    FerroddsWriter pw;
    FerroddsReader pr;
    struct perf_seen seen = {0};
    OK(ferrodds_topic_create(pub_p, "capi_perf", FERRODDS_TYPE_TEST_DATA_KEYED, &pt_pub));
    OK(ferrodds_topic_create(sub_p, "capi_perf", FERRODDS_TYPE_TEST_DATA_KEYED, &pt_sub));
    OK(ferrodds_writer_create(pub_p, pt_pub, &wq, NULL, &pw));
    OK(ferrodds_reader_create(sub_p, pt_sub, &rq, NULL, &pr));
    OK(ferrodds_writer_wait_for_matched(pw, 1, 10 * SEC));
    len = perftest(big, 3, 42, 1000);
    OK(ferrodds_write(pw, big, len));
    OK(ferrodds_reader_wait_for_data(pr, 5 * SEC));
    OK(ferrodds_take_each(pr, 0, on_perf, &seen, &count));
    CHECK(count == 1 && seen.count == 1 && seen.seq == 42 && seen.len == 4 + 28 + 1000);
    CHECK(seen.payload_ok);
    len = perftest(big, 3, 43, 65471);
    CHECK(ferrodds_write(pw, big, len) == FERRODDS_RETCODE_SERIALIZATION);
    CHECK(strstr(ferrodds_last_error_message(), "65470") != NULL);
    OK(ferrodds_writer_delete(pw));
    OK(ferrodds_topic_delete(pt_pub));
  }

  /* Deleted handles are errors, not crashes. */
  OK(ferrodds_writer_delete(w));
  CHECK(ferrodds_write(w, buf, len) == FERRODDS_RETCODE_ALREADY_DELETED);
  CHECK(strstr(ferrodds_last_error_message(), "deleted") != NULL);
  CHECK(ferrodds_writer_delete(w) == FERRODDS_RETCODE_ALREADY_DELETED);
  {
    /* The reader sees the writer gone. */
    FerroddsSubscriptionMatchedStatus sm = {0};
    for (int i = 0; i < 100; i++) {
      OK(ferrodds_reader_get_subscription_matched_status(r, &sm));
      if (sm.current_count == 0) break;
      ferrodds_waitset_wait(ws, 50 * 1000000LL, NULL, 0, NULL);
      ferrodds_take_each(r, 0, on_perf, &(struct perf_seen){0}, NULL);
    }
    CHECK(sm.current_count == 0);
  }
  OK(ferrodds_waitset_detach(ws, r));
  OK(ferrodds_waitset_delete(ws));
  OK(ferrodds_guard_condition_delete(gc));
  OK(ferrodds_participant_delete(sub_p));
  CHECK(ferrodds_take(r, buf, sizeof buf, &len, &info) == FERRODDS_RETCODE_ALREADY_DELETED);
  CHECK(ferrodds_reader_delete(r) == FERRODDS_RETCODE_ALREADY_DELETED);
  OK(ferrodds_participant_delete(pub_p));
  CHECK(ferrodds_participant_delete(pub_p) == FERRODDS_RETCODE_ALREADY_DELETED);

  printf("api_test: ok (%d checks)\n", checks);
  return 0;
}
