//! Feeds arbitrary bytes, in arbitrary chunks, to the TCP transport's deframer (Cyclone DDS's
//! `MSG_LEN` framing): it must yield messages or a typed error, never panic, and every message
//! it yields must carry a valid frame prefix announcing exactly its length.
#![no_main]

use ferrodds_transport::tcp::{frame_length, Deframer};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&chunk, stream)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(chunk).max(1);
    let mut d = Deframer::new();
    for part in stream.chunks(chunk) {
        let spare = d.spare();
        let n = part.len().min(spare.len());
        spare[..n].copy_from_slice(&part[..n]);
        d.filled(n);
        loop {
            match d.next_message() {
                Ok(Some(m)) => assert_eq!(frame_length(m), Ok(m.len())),
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
});
