//! 100,000 instances end to end over the simulated network: a keyed
//! reliable KEEP_LAST 1 writer and reader, with some loss.

use std::collections::HashSet;
use std::time::Duration;

use ferrodds_rtps::{
    ChangeKind, History, InstanceState, ReaderAttributes, ReaderQos, Reliability, WriteRequest,
    WriterAttributes, WriterQos,
};
use ferrodds_testkit::{LinkConfig, Network};

const N: u32 = 100_000;

fn key(i: u32) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..4].copy_from_slice(&i.to_be_bytes());
    k
}

#[test]
fn hundred_thousand_instances_end_to_end() {
    let mut net = Network::new(11);
    let a = net.add_participant(0);
    let b = net.add_participant(0);
    let now = net.now;
    let w = net
        .p(a)
        .create_writer(
            WriterAttributes {
                topic_name: "K".into(),
                type_name: "K".into(),
                keyed: true,
                qos: WriterQos {
                    history: History::KeepLast(1),
                    ..WriterQos::default()
                },
            },
            now,
        )
        .unwrap();
    let r = net
        .p(b)
        .create_reader(
            ReaderAttributes {
                topic_name: "K".into(),
                type_name: "K".into(),
                keyed: true,
                qos: ReaderQos {
                    reliability: Reliability::RELIABLE,
                    history: History::KeepLast(1),
                    ..ReaderQos::default()
                },
            },
            now,
        )
        .unwrap();
    assert!(net.run_until(Duration::from_secs(2), |n| {
        n.nodes[a].participant.matched_reader_count(w) == 1
            && n.nodes[b].participant.matched_writer_count(r) == 1
    }));
    net.run_for(Duration::from_millis(50));
    net.set_link(a, b, LinkConfig::lossy(0.01, 0.0, 0.0));
    for i in 0..N {
        let mut p = [0u8, 1, 0, 0, 0, 0, 0, 0];
        p[4..].copy_from_slice(&i.to_be_bytes());
        let now = net.now;
        net.p(a)
            .write(
                w,
                WriteRequest {
                    kind: ChangeKind::Alive,
                    key_hash: Some(key(i)),
                    serialized_payload: &p,
                    source_timestamp: None,
                },
                now,
            )
            .unwrap();
        if i % 1000 == 999 {
            net.flush(a);
            net.run_for(Duration::from_micros(200));
        }
    }
    assert!(net.run_until(Duration::from_secs(30), |n| n.nodes[a]
        .participant
        .is_acknowledged_by_all(w)));
    let keys: HashSet<[u8; 16]> = net.nodes[b]
        .samples_of(r)
        .map(|s| {
            let k = s.key_hash.unwrap();
            assert_eq!(&s.payload[4..8], &k[..4]);
            k
        })
        .collect();
    assert_eq!(net.nodes[b].samples_of(r).count(), N as usize);
    assert_eq!(keys.len(), N as usize);
    assert_eq!(
        net.nodes[b].participant.reader_instance_count(r),
        N as usize
    );
    assert_eq!(
        net.nodes[a].participant.writer_instance_count(w),
        N as usize
    );
    assert_eq!(
        net.nodes[b].participant.reader_instance_state(r, &key(7)),
        Some(InstanceState::Alive)
    );
}
