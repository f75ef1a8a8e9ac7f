// eProsima Fast DDS (2.9, Debian's libfastrtps-dev) peer for the FerroDDS interop tests.
//
// The same command line and output protocol as the Cyclone DDS peer (interop/cyclone/peer.py),
// for the perftest types only:
//
//   fastdds_peer sub --type keyed --topic T --count 1000 [--reliable] [--keep-all]
//   fastdds_peer pub --type unkeyed --topic T --count 1000 [--reliable] [--dispose]
//
// Types (must match crates/cdr/src/types.rs): unkeyed = TestData_t, keyed = TestDataKeyed_t
// (@key octet key[4]), large = TestDataLarge_t (unbounded payload; --size N for fragmented
// samples). Serialized by hand in XCDR1 (plain CDR, little endian): the types are flat, and no
// code generator is needed to build this file.
//
// Output (stdout, one line each, flushed): READY, MATCHED <n>, SAMPLE <key> <seq> <entity>
// <len> ok|BAD, DISPOSED <key>, WROTE <n>, ACKED, DONE <count>. Exit 0 on success, 2 on a
// timeout before --count samples (or --disposals) arrived, 1 on bad arguments.
//
// Everything stays on loopback: the builtin transports are off, one UDPv4 transport allows
// only the interface 127.0.0.1, and discovery also goes to the unicast initial peer 127.0.0.1.
// `--shm` adds Fast DDS's shared-memory transport (same host only).
//
// Latency benchmark roles (scripts/bench-shm.sh), reliable KEEP_ALL as perftest's latency test:
//   pong  --topic T            echoes every sample of T_ping on T_pong, from the listener
//   ping  --topic T --size N --seconds S
//                              stop-and-wait ping-pong (N is perftest's -dataLen); prints
//                              LATENCY <count> <p50_us> <p90_us> <p99_us> (one way: RTT / 2)

#include <fastdds/dds/domain/DomainParticipant.hpp>
#include <fastdds/dds/domain/DomainParticipantFactory.hpp>
#include <fastdds/dds/domain/qos/DomainParticipantQos.hpp>
#include <fastdds/dds/publisher/DataWriter.hpp>
#include <fastdds/dds/publisher/Publisher.hpp>
#include <fastdds/dds/publisher/qos/DataWriterQos.hpp>
#include <fastdds/dds/subscriber/DataReader.hpp>
#include <fastdds/dds/subscriber/SampleInfo.hpp>
#include <fastdds/dds/subscriber/Subscriber.hpp>
#include <fastdds/dds/subscriber/qos/DataReaderQos.hpp>
#include <fastdds/dds/topic/Topic.hpp>
#include <fastdds/dds/topic/TopicDataType.hpp>
#include <fastdds/dds/topic/TypeSupport.hpp>
#include <fastdds/rtps/transport/UDPv4TransportDescriptor.h>
#include <fastdds/rtps/transport/shared_mem/SharedMemTransportDescriptor.h>
#include <fastrtps/utils/IPLocator.h>
#include <fastrtps/utils/md5.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace eprosima::fastdds::dds;
using eprosima::fastrtps::rtps::InstanceHandle_t;
using eprosima::fastrtps::rtps::Locator_t;
using eprosima::fastrtps::rtps::SerializedPayload_t;

namespace {

// Set by SIGTERM / SIGINT: every loop ends and the participant is deleted, so Fast DDS
// removes its shared-memory segments and semaphores (a killed process leaves them in
// /dev/shm).
std::atomic<bool> g_stop{false};

extern "C" void on_stop_signal(int) {
    g_stop.store(true);
}

// Sleeps until `t` or until a stop signal.
template <class TimePoint>
void sleep_until_stopped(TimePoint t) {
    while (!g_stop.load() && std::chrono::steady_clock::now() < t) {
        auto left = t - std::chrono::steady_clock::now();
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
            left, std::chrono::milliseconds(20)));
    }
}

// The perftest sample (all three types share the layout; only the key and bound differ).
struct TestData {
    uint8_t key[4] = {0, 0, 0, 0};
    int32_t entity_id = 0;
    uint32_t seq_num = 0;
    int32_t timestamp_sec = 0;
    uint32_t timestamp_usec = 0;
    int32_t latency_ping = -1;
    std::vector<uint8_t> bin_data;
};

constexpr uint32_t kHeader = 4;       // encapsulation
constexpr uint32_t kFixed = 4 + 5 * 4; // key[4] + five 32-bit fields
constexpr uint32_t kBounded = 65470;  // MAX_BOUNDED_SEQ_SIZE of the bounded types

void out(const std::string& line) {
    std::fputs(line.c_str(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
}

void put_u32(uint8_t* p, uint32_t v) {
    std::memcpy(p, &v, 4); // the peer runs on little-endian hosts and writes CDR_LE
}

uint32_t get_u32(const uint8_t* p, bool le) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    if (!le) {
        v = __builtin_bswap32(v);
    }
    return v;
}

class TestDataType : public TopicDataType {
public:
    TestDataType(const char* name, bool keyed, uint32_t max_payload)
        : keyed_(keyed), max_payload_(max_payload) {
        setName(name);
        m_typeSize = kHeader + kFixed + 4 + max_payload;
        m_isGetKeyDefined = keyed;
    }

    bool serialize(void* data, SerializedPayload_t* payload) override {
        auto* d = static_cast<TestData*>(data);
        uint32_t n = static_cast<uint32_t>(d->bin_data.size());
        uint32_t len = kHeader + kFixed + 4 + n;
        if (n > max_payload_ || len > payload->max_size) {
            return false;
        }
        uint8_t* p = payload->data;
        p[0] = 0x00; // CDR_LE
        p[1] = 0x01;
        p[2] = 0x00;
        p[3] = 0x00;
        std::memcpy(p + 4, d->key, 4);
        put_u32(p + 8, static_cast<uint32_t>(d->entity_id));
        put_u32(p + 12, d->seq_num);
        put_u32(p + 16, static_cast<uint32_t>(d->timestamp_sec));
        put_u32(p + 20, d->timestamp_usec);
        put_u32(p + 24, static_cast<uint32_t>(d->latency_ping));
        put_u32(p + 28, n);
        if (n > 0) {
            std::memcpy(p + 32, d->bin_data.data(), n);
        }
        payload->length = len;
        payload->encapsulation = CDR_LE;
        return true;
    }

    bool deserialize(SerializedPayload_t* payload, void* data) override {
        auto* d = static_cast<TestData*>(data);
        const uint8_t* p = payload->data;
        if (payload->length < kHeader + kFixed + 4 || p[0] != 0x00 || p[1] > 0x01) {
            return false;
        }
        bool le = p[1] == 0x01;
        std::memcpy(d->key, p + 4, 4);
        d->entity_id = static_cast<int32_t>(get_u32(p + 8, le));
        d->seq_num = get_u32(p + 12, le);
        d->timestamp_sec = static_cast<int32_t>(get_u32(p + 16, le));
        d->timestamp_usec = get_u32(p + 20, le);
        d->latency_ping = static_cast<int32_t>(get_u32(p + 24, le));
        uint32_t n = get_u32(p + 28, le);
        if (n > max_payload_ || n > payload->length - (kHeader + kFixed + 4)) {
            return false;
        }
        d->bin_data.assign(p + 32, p + 32 + n);
        return true;
    }

    std::function<uint32_t()> getSerializedSizeProvider(void* data) override {
        auto* d = static_cast<TestData*>(data);
        return [d]() { return kHeader + kFixed + 4 + static_cast<uint32_t>(d->bin_data.size()); };
    }

    void* createData() override { return new TestData(); }

    void deleteData(void* data) override { delete static_cast<TestData*>(data); }

    bool getKey(void* data, InstanceHandle_t* handle, bool force_md5) override {
        if (!keyed_) {
            return false;
        }
        auto* d = static_cast<TestData*>(data);
        // The key hash: the key members in big-endian CDR (four octets), zero-padded to 16
        // bytes; MD5 of them only when asked to (the key is at most 16 bytes).
        uint8_t key[16] = {0};
        std::memcpy(key, d->key, 4);
        if (force_md5) {
            ::MD5 md5;
            md5.init();
            md5.update(reinterpret_cast<char*>(key), 4);
            md5.finalize();
            for (int i = 0; i < 16; ++i) {
                handle->value[i] = md5.digest[i];
            }
        } else {
            for (int i = 0; i < 16; ++i) {
                handle->value[i] = key[i];
            }
        }
        return true;
    }

private:
    bool keyed_;
    uint32_t max_payload_;
};

struct Args {
    std::string role;
    std::string kind;
    std::string topic;
    int domain = 0;
    long count = 10;
    long instances = 1;
    long size = -1;
    bool reliable = false;
    bool transient_local = false;
    bool keep_all = false;
    int depth = 1;
    long disposals = 0;
    bool dispose = false;
    bool shm = false;
    double linger = 1.0;
    double timeout = 30.0;
    double seconds = 5.0;
};

[[noreturn]] void usage(const std::string& why) {
    std::fprintf(stderr, "fastdds_peer: %s\n", why.c_str());
    std::exit(1);
}

Args parse(int argc, char** argv) {
    Args a;
    if (argc < 2) {
        usage("usage: fastdds_peer pub|sub --type unkeyed|keyed|large --topic T [options]");
    }
    a.role = argv[1];
    if (a.role != "pub" && a.role != "sub" && a.role != "ping" && a.role != "pong") {
        usage("the role is pub, sub, ping or pong, not '" + a.role + "'");
    }
    for (int i = 2; i < argc; ++i) {
        std::string o = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                usage(o + " needs a value");
            }
            return argv[++i];
        };
        auto number = [&]() -> long {
            std::string v = value();
            char* end = nullptr;
            long n = std::strtol(v.c_str(), &end, 10);
            if (v.empty() || *end != '\0' || n < 0) {
                usage(o + ": not a number: '" + v + "'");
            }
            return n;
        };
        if (o == "--type") {
            a.kind = value();
        } else if (o == "--topic") {
            a.topic = value();
        } else if (o == "--domain") {
            a.domain = static_cast<int>(number());
        } else if (o == "--count") {
            a.count = number();
        } else if (o == "--instances") {
            a.instances = number();
        } else if (o == "--size") {
            a.size = number();
        } else if (o == "--depth") {
            a.depth = static_cast<int>(number());
        } else if (o == "--disposals") {
            a.disposals = number();
        } else if (o == "--timeout") {
            a.timeout = std::atof(value().c_str());
        } else if (o == "--seconds") {
            a.seconds = std::atof(value().c_str());
        } else if (o == "--linger") {
            a.linger = std::atof(value().c_str());
        } else if (o == "--reliable") {
            a.reliable = true;
        } else if (o == "--transient-local") {
            a.transient_local = true;
        } else if (o == "--keep-all") {
            a.keep_all = true;
        } else if (o == "--dispose") {
            a.dispose = true;
        } else if (o == "--shm") {
            a.shm = true;
        } else {
            usage("unknown option " + o);
        }
    }
    if (a.kind != "unkeyed" && a.kind != "keyed" && a.kind != "large") {
        usage("--type is unkeyed, keyed or large");
    }
    if (a.topic.empty()) {
        usage("--topic is required");
    }
    if (a.instances < 1) {
        usage("--instances must be at least 1");
    }
    return a;
}

// Deterministic payload: length seq % 64 (or --size), bytes (seq + i) % 256.
std::vector<uint8_t> payload_for(uint32_t seq, long size) {
    size_t n = size >= 0 ? static_cast<size_t>(size) : seq % 64;
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) {
        v[i] = static_cast<uint8_t>((seq + i) % 256);
    }
    return v;
}

TestData make_sample(uint32_t i, long instances, long size) {
    TestData d;
    uint32_t inst = static_cast<uint32_t>(i % instances);
    for (int b = 0; b < 4; ++b) {
        d.key[b] = static_cast<uint8_t>(inst >> (8 * b));
    }
    d.entity_id = 7;
    d.seq_num = i;
    d.bin_data = payload_for(i, size);
    return d;
}

uint32_t key_of(const uint8_t* k) {
    return k[0] | (k[1] << 8) | (k[2] << 16) | (static_cast<uint32_t>(k[3]) << 24);
}

DomainParticipantQos participant_qos(const Args& a) {
    DomainParticipantQos q = PARTICIPANT_QOS_DEFAULT;
    q.name("fastdds_peer");
    q.transport().use_builtin_transports = false;
    auto udp = std::make_shared<eprosima::fastdds::rtps::UDPv4TransportDescriptor>();
    udp->interfaceWhiteList.push_back("127.0.0.1");
    q.transport().user_transports.push_back(udp);
    if (a.shm) {
        q.transport().user_transports.push_back(
            std::make_shared<eprosima::fastdds::rtps::SharedMemTransportDescriptor>());
    }
    Locator_t peer;
    eprosima::fastrtps::rtps::IPLocator::setIPv4(peer, 127, 0, 0, 1);
    q.wire_protocol().builtin.initialPeersList.push_back(peer);
    return q;
}

template <typename Q>
void common_qos(Q& q, const Args& a) {
    q.reliability().kind = a.reliable ? RELIABLE_RELIABILITY_QOS : BEST_EFFORT_RELIABILITY_QOS;
    q.durability().kind =
        a.transient_local ? TRANSIENT_LOCAL_DURABILITY_QOS : VOLATILE_DURABILITY_QOS;
    if (a.keep_all) {
        q.history().kind = KEEP_ALL_HISTORY_QOS;
    } else {
        q.history().kind = KEEP_LAST_HISTORY_QOS;
        q.history().depth = a.depth;
    }
    q.resource_limits().max_samples = 200000;
    q.resource_limits().max_instances = 20000;
    q.resource_limits().max_samples_per_instance = 200000;
    q.resource_limits().allocated_samples = 100;
    q.endpoint().history_memory_policy =
        eprosima::fastrtps::rtps::PREALLOCATED_WITH_REALLOC_MEMORY_MODE;
}

using Clock = std::chrono::steady_clock;

// ---- benchmark roles -------------------------------------------------------------------------

// Reliable KEEP_ALL with a history of 5,000 samples and a HEARTBEAT every millisecond. Fast
// DDS's default HEARTBEAT period is 3 s and it piggybacks HEARTBEATs by bytes sent, so one small
// sample per round trip is acknowledged only by the periodic HEARTBEAT; with perftest's
// 50-sample history Fast DDS 2.9.1's write then failed once the history was full.
template <typename Q>
void bench_qos(Q& q) {
    q.reliability().kind = RELIABLE_RELIABILITY_QOS;
    q.reliability().max_blocking_time = eprosima::fastrtps::Duration_t(10, 0);
    q.durability().kind = VOLATILE_DURABILITY_QOS;
    q.history().kind = KEEP_ALL_HISTORY_QOS;
    const int32_t window = 5000;
    q.resource_limits().max_samples = window;
    q.resource_limits().max_instances = 1;
    q.resource_limits().max_samples_per_instance = window;
    q.resource_limits().allocated_samples = std::min(window, 100);
    q.endpoint().history_memory_policy =
        eprosima::fastrtps::rtps::DYNAMIC_REUSABLE_MEMORY_MODE;
}

// Takes every sample in the listener; `on_sample` runs for each valid one.
class TakeListener : public DataReaderListener {
public:
    explicit TakeListener(std::function<void(TestData&)> on_sample)
        : on_sample_(std::move(on_sample)) {}

    void on_data_available(DataReader* reader) override {
        SampleInfo info;
        while (reader->take_next_sample(&data_, &info) == ReturnCode_t::RETCODE_OK) {
            if (info.valid_data) {
                on_sample_(data_);
            }
        }
    }

private:
    std::function<void(TestData&)> on_sample_;
    TestData data_;
};

DataWriter* bench_writer(DomainParticipant* dp, Topic* t) {
    DataWriterQos q = DATAWRITER_QOS_DEFAULT;
    bench_qos(q);
    q.reliable_writer_qos().times.heartbeatPeriod = eprosima::fastrtps::Duration_t(0, 1000000);
    return dp->create_publisher(PUBLISHER_QOS_DEFAULT)->create_datawriter(t, q);
}

DataReader* bench_reader(DomainParticipant* dp, Topic* t, DataReaderListener* l) {
    DataReaderQos q = DATAREADER_QOS_DEFAULT;
    bench_qos(q);
    return dp->create_subscriber(SUBSCRIBER_QOS_DEFAULT)
        ->create_datareader(t, q, l, StatusMask::data_available());
}

bool wait_matched(DataWriter* w, Clock::time_point deadline) {
    PublicationMatchedStatus st;
    for (;;) {
        w->get_publication_matched_status(st);
        if (st.current_count >= 1) {
            return true;
        }
        if (Clock::now() > deadline || g_stop.load()) {
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

uint64_t now_us() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                     Clock::now().time_since_epoch())
                                     .count());
}

int run_bench(const Args& a, DomainParticipant* dp, const char* type_name) {
    auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<long>(a.timeout * 1000));
    auto topic = [&](const std::string& suffix) {
        Topic* t = dp->create_topic(a.topic + suffix, type_name, TOPIC_QOS_DEFAULT);
        if (t == nullptr) {
            usage("cannot create topic " + a.topic + suffix);
        }
        return t;
    };
    size_t size = a.size >= 0 ? static_cast<size_t>(a.size) : 0;
    // perftest's dataLen counts the fixed fields and the sequence length: the payload is the rest.
    size_t payload = size > kFixed + 4 ? size - (kFixed + 4) : 0;

    if (a.role == "pong") {
        DataWriter* w = bench_writer(dp, topic("_pong"));
        TakeListener l([w](TestData& d) { w->write(&d); });
        bench_reader(dp, topic("_ping"), &l);
        out("READY");
        sleep_until_stopped(deadline);
        dp->delete_contained_entities();
        return 0;
    }
    if (a.role == "ping") {
        std::mutex m;
        std::condition_variable cv;
        uint32_t last_pong = UINT32_MAX;
        std::vector<uint32_t> lat;
        uint64_t sent_at = 0;
        TakeListener l([&](TestData& d) {
            uint64_t rtt = now_us() - sent_at;
            std::lock_guard<std::mutex> g(m);
            if (d.seq_num != UINT32_MAX) {
                lat.push_back(static_cast<uint32_t>(rtt / 2));
            }
            last_pong = d.seq_num;
            cv.notify_one();
        });
        DataWriter* w = bench_writer(dp, topic("_ping"));
        bench_reader(dp, topic("_pong"), &l);
        out("READY");
        if (!wait_matched(w, deadline)) {
            out("DONE 0");
            return 2;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        TestData d;
        d.entity_id = 7;
        d.bin_data.assign(payload, 0);
        lat.reserve(1 << 20);
        auto end = Clock::now() + std::chrono::milliseconds(static_cast<long>(a.seconds * 1000));
        for (uint32_t seq = 0; !g_stop.load() && Clock::now() < end && Clock::now() < deadline;
             ++seq) {
            d.seq_num = seq;
            {
                std::lock_guard<std::mutex> g(m);
                sent_at = now_us();
            }
            if (!w->write(&d)) {
                out("WRITEFAIL " + std::to_string(seq));
                break;
            }
            std::unique_lock<std::mutex> g(m);
            if (!cv.wait_for(g, std::chrono::seconds(1), [&] { return last_pong == seq; })) {
                out("NOPONG " + std::to_string(seq));
                break;
            }
        }
        std::vector<uint32_t> v;
        {
            std::lock_guard<std::mutex> g(m);
            v = lat;
        }
        if (v.size() < 2) {
            out("LATENCY 0 0 0 0");
            return 2;
        }
        v.erase(v.begin()); // the first exchange includes the path's warm-up
        std::sort(v.begin(), v.end());
        auto pct = [&](double p) { return v[static_cast<size_t>(p * (v.size() - 1))]; };
        out("LATENCY " + std::to_string(v.size()) + " " + std::to_string(pct(0.5)) + " " +
            std::to_string(pct(0.9)) + " " + std::to_string(pct(0.99)));
        dp->delete_contained_entities();
        return 0;
    }
    usage("unknown benchmark role " + a.role);
}

} // namespace

int main(int argc, char** argv) {
    std::signal(SIGTERM, on_stop_signal);
    std::signal(SIGINT, on_stop_signal);
    Args a = parse(argc, argv);
    bool keyed = a.kind == "keyed";
    const char* type_name = keyed ? "TestDataKeyed_t"
                            : a.kind == "large" ? "TestDataLarge_t"
                                                : "TestData_t";
    uint32_t max_payload = kBounded;
    if (a.kind == "large") {
        max_payload = static_cast<uint32_t>(a.size > 0 ? a.size : 1 << 20);
    } else if (a.size > static_cast<long>(kBounded)) {
        usage("--size above 65470 needs --type large");
    }

    auto* factory = DomainParticipantFactory::get_instance();
    DomainParticipant* dp = factory->create_participant(a.domain, participant_qos(a));
    if (dp == nullptr) {
        usage("cannot create the participant");
    }
    TypeSupport type(new TestDataType(type_name, keyed, max_payload));
    type.register_type(dp);
    if (a.role != "pub" && a.role != "sub") {
        int rc = run_bench(a, dp, type_name);
        factory->delete_participant(dp);
        return rc;
    }
    Topic* topic = dp->create_topic(a.topic, type_name, TOPIC_QOS_DEFAULT);
    if (topic == nullptr) {
        usage("cannot create the topic");
    }
    auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<long>(a.timeout * 1000));

    if (a.role == "sub") {
        Subscriber* sub = dp->create_subscriber(SUBSCRIBER_QOS_DEFAULT);
        DataReaderQos rq = DATAREADER_QOS_DEFAULT;
        common_qos(rq, a);
        DataReader* reader = sub->create_datareader(topic, rq);
        if (reader == nullptr) {
            usage("cannot create the reader");
        }
        out("READY");
        long received = 0;
        long disposed = 0;
        int32_t last_matched = 0;
        TestData d;
        SampleInfo info;
        while (!g_stop.load() && Clock::now() < deadline &&
               (received < a.count || disposed < a.disposals)) {
            SubscriptionMatchedStatus st;
            reader->get_subscription_matched_status(st);
            if (st.current_count != last_matched) {
                last_matched = st.current_count;
                out("MATCHED " + std::to_string(last_matched));
            }
            bool got = false;
            while (reader->take_next_sample(&d, &info) == ReturnCode_t::RETCODE_OK) {
                got = true;
                if (info.valid_data) {
                    ++received;
                    bool ok = d.bin_data == payload_for(d.seq_num, a.size);
                    out("SAMPLE " + std::to_string(key_of(d.key)) + " " +
                        std::to_string(d.seq_num) + " " + std::to_string(d.entity_id) + " " +
                        std::to_string(d.bin_data.size()) + (ok ? " ok" : " BAD"));
                } else if (info.instance_state == NOT_ALIVE_DISPOSED_INSTANCE_STATE) {
                    ++disposed;
                    // The instance handle is the key hash: the key's four octets first.
                    out("DISPOSED " + std::to_string(key_of(info.instance_handle.value)));
                }
            }
            if (!got) {
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
            }
        }
        out("DONE " + std::to_string(received));
        bool ok = received >= a.count && disposed >= a.disposals;
        dp->delete_contained_entities();
        factory->delete_participant(dp);
        return ok ? 0 : 2;
    }

    Publisher* pub = dp->create_publisher(PUBLISHER_QOS_DEFAULT);
    DataWriterQos wq = DATAWRITER_QOS_DEFAULT;
    common_qos(wq, a);
    if (a.kind == "large") {
        wq.publish_mode().kind = ASYNCHRONOUS_PUBLISH_MODE;
    }
    DataWriter* writer = pub->create_datawriter(topic, wq);
    if (writer == nullptr) {
        usage("cannot create the writer");
    }
    out("READY");
    if (!wait_matched(writer, deadline)) {
        out("DONE 0");
        return 2;
    }
    PublicationMatchedStatus st;
    writer->get_publication_matched_status(st);
    out("MATCHED " + std::to_string(st.current_count));
    // Give the remote reader a moment to see the match too.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    for (long i = 0; i < a.count; ++i) {
        TestData d = make_sample(static_cast<uint32_t>(i), a.instances, a.size);
        if (!writer->write(&d)) {
            out("WRITEFAIL " + std::to_string(i));
            return 2;
        }
        if (!a.reliable && i % 50 == 49) {
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
    }
    out("WROTE " + std::to_string(a.count));
    if (a.dispose) {
        for (long i = 0; i < std::min(a.instances, a.count); ++i) {
            TestData d = make_sample(static_cast<uint32_t>(i), a.instances, a.size);
            writer->dispose(&d, HANDLE_NIL);
        }
    }
    if (a.reliable) {
        double left = std::chrono::duration<double>(deadline - Clock::now()).count();
        eprosima::fastrtps::Duration_t wait(left > 1.0 ? left : 1.0);
        if (writer->wait_for_acknowledgments(wait) == ReturnCode_t::RETCODE_OK) {
            out("ACKED");
        } else {
            out("ACKFAIL");
        }
    }
    sleep_until_stopped(Clock::now() +
                        std::chrono::milliseconds(static_cast<long>(a.linger * 1000)));
    out("DONE " + std::to_string(a.count));
    dp->delete_contained_entities();
    factory->delete_participant(dp);
    return 0;
}
