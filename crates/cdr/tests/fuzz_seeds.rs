//! The seeds of the `cdr_decode` fuzz target (`fuzz/corpus-seeds/cdr_decode/`): one serialized
//! sample of every shipped type in XCDR1 and XCDR2, both byte orders, as `encode_sample`
//! writes them. This test checks the committed files are exactly those; after a change to
//! the encoding, regenerate them with
//! `FERRODDS_WRITE_FUZZ_SEEDS=1 cargo test -p ferrodds-cdr --test fuzz_seeds`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use ferrodds_cdr::types::{ShapeType, TestData, TestDataKeyed, TestDataKeyedLarge, TestDataLarge};
use ferrodds_cdr::{decode_sample, encode_sample, Encoding, TopicType};

fn add<T: TopicType + PartialEq + std::fmt::Debug>(
    seeds: &mut BTreeMap<String, Vec<u8>>,
    name: &str,
    value: &T,
) {
    for (enc, e) in [
        ("xcdr1-le", Encoding::XCDR1_LE),
        ("xcdr1-be", Encoding::XCDR1_BE),
        ("xcdr2-le", Encoding::XCDR2_LE),
        ("xcdr2-be", Encoding::XCDR2_BE),
    ] {
        let mut buf = Vec::new();
        encode_sample(value, e, &mut buf).unwrap();
        assert_eq!(&decode_sample::<T>(&buf).unwrap(), value);
        seeds.insert(format!("{name}-{enc}"), buf);
    }
}

macro_rules! perftest {
    ($t:ident, $len:expr) => {
        $t {
            key: [1, 2, 3, 4],
            entity_id: 5,
            seq_num: 6,
            timestamp_sec: 7,
            timestamp_usec: 8,
            latency_ping: -1,
            bin_data: (0..$len).map(|i: u32| i as u8).collect(),
        }
    };
}

fn expected() -> BTreeMap<String, Vec<u8>> {
    let mut s = BTreeMap::new();
    add(&mut s, "test-data", &perftest!(TestData, 32));
    add(&mut s, "test-data-keyed", &perftest!(TestDataKeyed, 3));
    add(&mut s, "test-data-large", &perftest!(TestDataLarge, 300));
    add(
        &mut s,
        "test-data-keyed-large",
        &perftest!(TestDataKeyedLarge, 0),
    );
    let shape = ShapeType {
        color: "BLUE".into(),
        x: 10,
        y: -20,
        shapesize: 30,
    };
    add(&mut s, "shape", &shape);
    s
}

#[test]
fn the_committed_cdr_decode_seeds_are_current() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus-seeds/cdr_decode");
    let want = expected();
    if std::env::var_os("FERRODDS_WRITE_FUZZ_SEEDS").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for (name, bytes) in &want {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
    }
    let mut have = BTreeMap::new();
    for e in std::fs::read_dir(&dir).expect("fuzz/corpus-seeds/cdr_decode") {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        have.insert(name, std::fs::read(&p).unwrap());
    }
    assert_eq!(
        have.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "regenerate: FERRODDS_WRITE_FUZZ_SEEDS=1 cargo test -p ferrodds-cdr --test fuzz_seeds"
    );
    for (name, bytes) in &want {
        assert_eq!(&have[name], bytes, "{name} is stale: regenerate");
    }
}
