//! The XML QoS profiles loader on arbitrary text: loading and then asking every profile for
//! its writer, reader, publisher and subscriber QoS must return a value or a `QosXmlError`,
//! never panic or hang.
#![no_main]

use ferrodds::QosProvider;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(p) = QosProvider::from_str(text, "fuzz.xml") {
        for name in p.profiles() {
            let _ = p.datawriter_qos(&name, "Throughput");
            let _ = p.datareader_qos(&name, "Latency");
            let _ = p.publisher_qos(&name);
            let _ = p.subscriber_qos(&name);
        }
    }
});
