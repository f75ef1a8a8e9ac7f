//! `ferrodds_capture::remove_user_data`, which rewrites every message a participant sends or
//! receives when its capture removes user data: any bytes (a received datagram is
//! untrusted). Properties on top of "never panics": the output's length is exactly the
//! input's minus the payload bytes removed and the unparsed tail, plus one 4-byte length
//! word per replaced submessage; when nothing was removed the message is copied as it is;
//! the output never needs more than the input's capacity plus those words.
#![no_main]

use ferrodds_capture::remove_user_data;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut out = Vec::with_capacity(data.len());
    let r = remove_user_data(data, &mut out);
    let expected = data.len() as u64 - r.bytes - r.unparsed_tail + 4 * u64::from(r.submessages);
    assert_eq!(out.len() as u64, expected, "{r:?}");
    if !r.any() {
        assert_eq!(out, data);
    }
    if r.unparsed_tail == 0 && data.len() >= 20 {
        assert_eq!(&out[..20], &data[..20], "header kept");
    }
});
