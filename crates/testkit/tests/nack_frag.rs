//! A NACK_FRAG (as Cyclone DDS readers send for partially received samples)
//! is answered with exactly the requested fragments.

use std::time::Duration;

use ferrodds_rtps::{History, ReaderQos, Reliability, WriterQos};
use ferrodds_testkit::helpers::{alive, reader, writer};
use ferrodds_testkit::{LinkConfig, Network};
use ferrodds_wire::{
    Count, Endianness, FragmentNumber, FragmentNumberSet, Header, InfoDst, MessageView,
    MessageWriter, NackFrag, SequenceNumber, Submessage,
};

#[test]
fn nack_frag_is_answered_with_the_requested_fragments() {
    let mut net = Network::new(5);
    let mut ca = Network::config_for(0, 0);
    ca.max_message_size = 1400;
    let a = net.add_participant_with(ca);
    let b = net.add_participant(0);
    let now = net.now;
    let wq = WriterQos {
        history: History::KeepAll,
        ..WriterQos::default()
    };
    let rq = ReaderQos {
        reliability: Reliability::RELIABLE,
        ..ReaderQos::default()
    };
    let w = net.p(a).create_writer(writer("T", wq), now).unwrap();
    let r = net.p(b).create_reader(reader("T", rq), now).unwrap();
    assert!(net.run_until(Duration::from_secs(2), |n| {
        n.nodes[a].participant.matched_reader_count(w) == 1
            && n.nodes[b].participant.matched_writer_count(r) == 1
    }));
    net.run_for(Duration::from_millis(50));
    // From now on nothing reaches the reader.
    net.set_link(
        a,
        b,
        LinkConfig {
            loss: 1.0,
            ..LinkConfig::default()
        },
    );
    let mut big = vec![0u8, 1, 0, 0];
    big.extend((0..10_000u32).map(|i| i as u8));
    let now = net.now;
    let sn = net.p(a).write(w, alive(&big), now).unwrap();
    net.flush(a);

    let reader_guid = net.p(b).reader_guid(r).unwrap();
    let writer_guid = net.p(a).writer_guid(w).unwrap();
    let mut frags = FragmentNumberSet::empty(FragmentNumber(2));
    assert!(frags.insert(FragmentNumber(2)));
    assert!(frags.insert(FragmentNumber(4)));
    let mut buf = [0u8; 256];
    let mut m = MessageWriter::new(&mut buf, &Header::new(reader_guid.prefix)).unwrap();
    m.push(
        &InfoDst {
            guid_prefix: writer_guid.prefix,
        },
        Endianness::Little,
    )
    .unwrap();
    m.push(
        &NackFrag {
            reader_id: reader_guid.entity_id,
            writer_id: writer_guid.entity_id,
            writer_sn: SequenceNumber(sn.0),
            fragment_number_state: frags,
            count: Count(1),
        },
        Endianness::Little,
    )
    .unwrap();
    let msg = m.finish().to_vec();
    let now = net.now;
    net.p(a).handle_datagram(now, None, &msg);
    let mut out = vec![0u8; 65536];
    let mut sent = Vec::new();
    while let Some(t) = net.p(a).poll_transmit(now, &mut out) {
        let view = MessageView::parse(&out[..t.len]).unwrap();
        for s in view.submessages() {
            if let Submessage::DataFrag(f) = s.unwrap() {
                sent.push(f.fragment_starting_num.0);
                let start = f.sample_offset() as usize;
                assert_eq!(
                    f.serialized_payload,
                    &big[start..start + f.serialized_payload.len()]
                );
            }
        }
    }
    assert_eq!(sent, vec![2, 4]);
    // A stale (repeated) count is ignored.
    net.p(a).handle_datagram(now, None, &msg);
    assert!(net.p(a).poll_transmit(now, &mut out).is_none());
}
