//! Parses arbitrary bytes as a parameter list in both byte orders and as a
//! PL_CDR serialized payload (encapsulation header + list).
//!
//! Properties checked on top of "never panics":
//! - iteration, `parse_prefix`, `find`, `get::<T>`, `get_all::<T>` and
//!   `check_must_understand` agree with each other;
//! - every parameter value is decoded as every typed value the crate knows
//!   (not only the one its PID names), and each successful decode re-encodes
//!   and decodes to an equal value;
//! - a list validated by `parse_prefix` is rebuilt with `ParameterListWriter`
//!   and parses back to the same parameters (values zero-padded to 4); a
//!   writer buffer one byte too small is reported, never a panic.
#![no_main]

use ferrodds_wire::qos::{
    DataRepresentation, Deadline, DestinationOrder, Durability, DurabilityService, History,
    LatencyBudget, Lifespan, Liveliness, Ownership, OwnershipStrength, Partition, Presentation,
    Reliability, ResourceLimits, TimeBasedFilter, TransportPriority,
};
use ferrodds_wire::*;
use libfuzzer_sys::fuzz_target;

/// Decodes `value` as `$ty`; on success, re-encodes and decodes again.
macro_rules! value_round_trip {
    ($ty:ty, $value:expr, $e:expr) => {{
        let (value, e): (&[u8], Endianness) = ($value, $e);
        if let Ok(v) = <$ty as ParameterValue>::decode(value, e) {
            let len = ParameterValue::encoded_len(&v);
            let mut buf = vec![0u8; len];
            let n = v.encode(e, &mut buf).expect("decoded value re-encodes");
            assert_eq!(n, len);
            let again = <$ty as ParameterValue>::decode(&buf, e).expect("re-encoded value decodes");
            assert_eq!(v, again);
        }
    }};
}

/// Generates, from one table of `type => [PIDs]`, the per-PID decode, the
/// `find`/`get`/`get_all` cross-check and the decode-as-everything check.
macro_rules! typed_values {
    ($($ty:ty => [$($pid:ident),+]),* $(,)?) => {
        /// Every PID with a typed value.
        const TYPED: &[u16] = &[$($(pid::$pid),+),*];

        /// Decodes `value` as the type its PID names.
        fn check_value(p: u16, value: &[u8], e: Endianness) {
            $(
                if [$(pid::$pid),+].contains(&p) {
                    value_round_trip!($ty, value, e);
                }
            )*
        }

        /// `find`, `get` and `get_all` agree with plain iteration, for the
        /// typed PIDs in `present` (those the list holds before any error).
        fn check_get(list: &ParameterList<'_>, present: &[u16]) {
            let e = list.endianness();
            $($(if present.contains(&pid::$pid) {
                let want = pid::$pid;
                let found = list.find(want);
                let got = list.get::<$ty>(want);
                assert_eq!(found.is_some(), got.is_some());
                if let (Some(p), Some(got)) = (found, got) {
                    assert_eq!(p.pid, want);
                    assert_eq!(got, <$ty as ParameterValue>::decode(p.value, e));
                }
                let first = list.iter().map_while(Result::ok).find(|p| p.pid == want);
                assert_eq!(first, found);
                let n = list.iter().map_while(Result::ok).filter(|p| p.pid == want).count();
                assert!(n >= 1);
                assert_eq!(list.get_all::<$ty>(want).count(), n);
            })+)*
        }

        /// Decodes `value` as every typed value.
        fn decode_as_everything(value: &[u8], e: Endianness) {
            $(value_round_trip!($ty, value, e);)*
        }
    };
}

typed_values! {
    Duration => [PARTICIPANT_LEASE_DURATION],
    TimeBasedFilter => [TIME_BASED_FILTER],
    &str => [TOPIC_NAME, TYPE_NAME, ENTITY_NAME, DOMAIN_TAG],
    OwnershipStrength => [OWNERSHIP_STRENGTH],
    u32 => [DOMAIN_ID, BUILTIN_ENDPOINT_QOS],
    ProtocolVersion => [PROTOCOL_VERSION],
    VendorId => [VENDORID],
    Reliability => [RELIABILITY],
    Liveliness => [LIVELINESS],
    Durability => [DURABILITY],
    DurabilityService => [DURABILITY_SERVICE],
    Ownership => [OWNERSHIP],
    Presentation => [PRESENTATION],
    Deadline => [DEADLINE],
    DestinationOrder => [DESTINATION_ORDER],
    LatencyBudget => [LATENCY_BUDGET],
    Partition<'_> => [PARTITION],
    Lifespan => [LIFESPAN],
    OctetSeq<'_> => [USER_DATA, GROUP_DATA, TOPIC_DATA],
    Locator => [
        UNICAST_LOCATOR,
        MULTICAST_LOCATOR,
        DEFAULT_UNICAST_LOCATOR,
        DEFAULT_MULTICAST_LOCATOR,
        METATRAFFIC_UNICAST_LOCATOR,
        METATRAFFIC_MULTICAST_LOCATOR
    ],
    i32 => [PARTICIPANT_MANUAL_LIVELINESS_COUNT],
    History => [HISTORY],
    ResourceLimits => [RESOURCE_LIMITS],
    bool => [EXPECTS_INLINE_QOS],
    TransportPriority => [TRANSPORT_PRIORITY],
    Guid => [PARTICIPANT_GUID, ENDPOINT_GUID, DIRECTED_WRITE],
    EntityId => [GROUP_ENTITYID],
    BuiltinEndpointSet => [BUILTIN_ENDPOINT_SET],
    PropertyList<'_> => [PROPERTY_LIST],
    KeyHash => [KEY_HASH],
    StatusInfo => [STATUS_INFO],
    DataRepresentation<'_> => [DATA_REPRESENTATION],
    SecurityInfo => [ENDPOINT_SECURITY_INFO, PARTICIPANT_SECURITY_INFO],
}

/// `b` is `a` followed by fewer than 4 zero bytes.
fn zero_padded(a: &[u8], b: &[u8]) -> bool {
    b.len() >= a.len()
        && b.len() - a.len() < 4
        && b.starts_with(a)
        && b[a.len()..].iter().all(|&x| x == 0)
}

/// Everything a consumer may do with an unvalidated list.
fn check_list(list: ParameterList<'_>) {
    let e = list.endianness();
    let mut first_error = None;
    for p in list.iter() {
        match p {
            Ok(p) => {
                assert_ne!(p.pid, pid::PAD, "PAD is skipped");
                assert_ne!(p.pid, pid::SENTINEL, "the sentinel ends the list");
                assert_eq!(p.must_understand(), p.pid & 0x4000 != 0);
                assert_eq!(p.is_vendor_specific(), p.pid & 0x8000 != 0);
                assert_eq!(p.decode::<u32>(e), u32::decode(p.value, e));
                check_value(p.pid, p.value, e);
                decode_as_everything(p.value, e);
                // Typed values no standard PID uses.
                value_round_trip!(GuidPrefix, p.value, e);
                value_round_trip!(Time, p.value, e);
            }
            Err(err) => first_error = Some(err),
        }
    }
    let present: Vec<u16> = list
        .iter()
        .map_while(Result::ok)
        .map(|p| p.pid)
        .filter(|p| TYPED.contains(p))
        .collect();
    check_get(&list, &present);
    // A typed PID the list does not hold is not found.
    if let Some(&absent) = TYPED.iter().find(|p| !present.contains(p)) {
        if first_error.is_none() {
            assert!(list.find(absent).is_none());
            assert!(list.get::<u32>(absent).is_none());
        }
    }

    // check_must_understand: the iteration error, else the first
    // must-understand parameter `known` rejects.
    assert_eq!(
        list.check_must_understand(|_| true),
        first_error.map_or(Ok(()), Err)
    );
    let known = |p: u16| TYPED.contains(&p);
    match list.check_must_understand(known) {
        Ok(()) => assert!(first_error.is_none()),
        Err(WireError::UnknownMustUnderstandParameter { pid }) => {
            assert!(pid::must_understand(pid) && !known(pid));
            let first_unknown = list
                .iter()
                .map_while(Result::ok)
                .find(|p| p.must_understand() && !known(p.pid));
            assert_eq!(first_unknown.map(|p| p.pid), Some(pid));
        }
        Err(err) => assert_eq!(Some(err), first_error),
    }
}

/// A list validated up to its sentinel: iterate, rebuild with the writer, compare.
fn check_validated(bytes: &[u8], list: ParameterList<'_>) {
    assert!(bytes.starts_with(list.as_bytes()));
    let mut it = list.iter();
    let params: Vec<Parameter<'_>> = it
        .by_ref()
        .map(|p| p.expect("a validated list iterates without error"))
        .collect();
    assert!(it.is_terminated());
    assert_eq!(it.consumed(), list.as_bytes().len());

    let need = 4 + params
        .iter()
        .map(|p| 4 + pad4(p.value.len()))
        .sum::<usize>();
    assert!(need <= list.as_bytes().len() + 3 * params.len());
    let mut buf = vec![0u8; need];
    let mut w = ParameterListWriter::new(&mut buf, list.endianness());
    for p in &params {
        w.push_raw(p.pid, p.value).expect("room was computed");
    }
    let rebuilt = w.finish().expect("room for the sentinel");
    assert_eq!(rebuilt.len(), need);
    let again = ParameterList::parse_prefix(rebuilt, list.endianness(), 0).expect("rebuilt list");
    let back: Vec<Parameter<'_>> = again.iter().map(|p| p.expect("iterates")).collect();
    assert_eq!(back.len(), params.len());
    for (a, b) in params.iter().zip(&back) {
        assert_eq!(a.pid, b.pid);
        assert!(zero_padded(a.value, b.value), "{a:?} became {b:?}");
    }

    // One byte short: an error somewhere, never a panic.
    let mut short = vec![0u8; need - 1];
    let mut w = ParameterListWriter::new(&mut short, list.endianness());
    let res = params
        .iter()
        .try_for_each(|p| w.push_raw(p.pid, p.value))
        .and_then(|()| w.finish().map(|_| ()));
    assert!(
        matches!(res, Err(WireError::BufferTooSmall { .. })),
        "{res:?}"
    );
}

fuzz_target!(|data: &[u8]| {
    for e in [Endianness::Little, Endianness::Big] {
        check_list(ParameterList::new(data, e));
        let validated = ParameterList::parse_prefix(data, e, 7);
        // parse_prefix fails exactly where iteration (with the same base) does.
        let first_error = Parameters::with_base(data, e, 7).find_map(Result::err);
        match validated {
            Ok(list) => {
                assert!(first_error.is_none());
                check_validated(data, list);
            }
            Err(err) => assert_eq!(Some(err), first_error),
        }
    }
    match ParameterList::from_serialized_payload(data) {
        Ok(list) => {
            let want = if data[1] == 0x03 {
                Endianness::Little
            } else {
                Endianness::Big
            };
            assert_eq!(data[0], 0);
            assert_eq!(list.endianness(), want);
            assert_eq!(list.as_bytes(), &data[4..]);
            check_list(list);
        }
        Err(WireError::Truncated { .. }) => assert!(data.len() < 4),
        Err(WireError::InvalidEncapsulation { id }) => {
            assert!(id != 2 && id != 3);
        }
        Err(err) => panic!("unexpected error {err}"),
    }
});
