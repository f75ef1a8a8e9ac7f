//! Feeds arbitrary bytes, in arbitrary chunks, to the TCP transport's deframer (Cyclone DDS's
//! `MSG_LEN` framing) the way the TLS read loop does (copy what fits into `spare`, take every
//! complete message, repeat until the chunk is in), and reads every message as the first one
//! of a connection (a hello). The first input byte is the chunk size, the rest the stream.
//!
//! Properties checked on top of "never panics":
//! - `spare` is never empty while no error was returned (an empty one would stall the TLS
//!   read loop);
//! - every message carries a valid frame prefix announcing exactly its length, and the
//!   messages are the stream's bytes, in order, unchanged;
//! - fewer than `MAX_TCP_MESSAGE` bytes stay pending.
//!
//! Seeds (`corpus-seeds/tcp_deframer`): a hello followed by Cyclone DDS messages (from the
//! `wire_message` seeds) framed with `MSG_LEN`, cut in chunks of 1, 7, 100 and 255 bytes, and
//! streams whose second frame is refused (not RTPS, no `MSG_LEN`, a length out of range).
#![no_main]

use ferrodds_transport::tcp::{frame_length, parse_hello, Deframer, MAX_TCP_MESSAGE};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&chunk, stream)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(chunk).max(1);
    let mut d = Deframer::new();
    // Bytes of `stream` yielded as messages so far.
    let mut yielded = 0;
    let mut fed = 0;
    for part in stream.chunks(chunk) {
        let mut off = 0;
        while off < part.len() {
            let spare = d.spare();
            assert!(!spare.is_empty(), "no room while no error was returned");
            let n = (part.len() - off).min(spare.len());
            spare[..n].copy_from_slice(&part[off..off + n]);
            d.filled(n);
            off += n;
            fed += n;
            loop {
                match d.next_message() {
                    Ok(Some(m)) => {
                        assert_eq!(frame_length(m), Ok(m.len()));
                        assert_eq!(m, &stream[yielded..yielded + m.len()]);
                        yielded += m.len();
                        if let Some(server) = parse_hello(m) {
                            assert_eq!(m.len(), 60, "a hello is 60 bytes: {server}");
                        }
                    }
                    Ok(None) => break,
                    Err(_) => return,
                }
            }
            assert_eq!(d.pending(), fed - yielded);
            assert!(d.pending() < MAX_TCP_MESSAGE);
        }
    }
});
